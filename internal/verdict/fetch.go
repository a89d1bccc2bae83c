package verdict

import "github.com/kop-offsets/kop-offsets/internal/kop"

// GroupFetch is KoP's answer for one group (package kop asks it).
type GroupFetch = kop.GroupFetch
