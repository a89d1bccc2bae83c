package verdict

import "github.com/kop-offsets/kop-offsets/internal/kafkafetch"

// GroupFetch is KoP's answer for one group (package kafkafetch asks it).
type GroupFetch = kafkafetch.GroupFetch
