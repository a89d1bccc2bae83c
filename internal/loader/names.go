package loader

import (
	"maps"
	"slices"
	"strings"
)

// names interns strings as dense ids; 0 is never used.
type names struct {
	ids  map[string]uint32
	strs []string // by id; "" when free
	free []uint32
	last uint32 // the last id looked up: consecutive records mostly name the same one
}

func newNames() names { return names{ids: map[string]uint32{}, strs: []string{""}} }

// lookup returns the id of s (which may view scratch memory) without adding it.
func (n *names) lookup(s string) (uint32, bool) {
	if n.last != 0 && n.strs[n.last] == s {
		return n.last, true
	}
	id, ok := n.ids[s]
	if ok {
		n.last = id
	}
	return id, ok
}

// id returns the id of s without touching the lookup cache: safe for concurrent readers of
// a state that no longer changes.
func (n *names) id(s string) (uint32, bool) {
	id, ok := n.ids[s]
	return id, ok
}

// add returns the id of s, interning an owned copy when it is new.
func (n *names) add(s string) uint32 {
	if id, ok := n.lookup(s); ok {
		return id
	}
	s = strings.Clone(s)
	var id uint32
	if k := len(n.free); k > 0 {
		id, n.free = n.free[k-1], n.free[:k-1]
		n.strs[id] = s
	} else {
		id = uint32(len(n.strs))
		n.strs = append(n.strs, s)
	}
	n.ids[s] = id
	n.last = id
	return id
}

func (n *names) remove(id uint32) {
	delete(n.ids, n.strs[id])
	n.strs[id] = ""
	n.free = append(n.free, id)
	if n.last == id {
		n.last = 0
	}
}

func (n *names) clone() names {
	return names{ids: maps.Clone(n.ids), strs: slices.Clone(n.strs), free: slices.Clone(n.free)}
}

// sorted returns the ids for which keep is true, sorted by name.
func (n *names) sorted(keep func(uint32) bool) []uint32 {
	out := make([]uint32, 0, len(n.ids))
	for _, id := range n.ids {
		if keep(id) {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b uint32) int { return strings.Compare(n.strs[a], n.strs[b]) })
	return out
}
