package fsm

// countedKinds names the trees whose values are objects worth counting
// (metrics, the status page), by object kind.
var countedKinds = map[treeID]string{}

// newCountedTree declares a tree of objects of one kind.
func newCountedTree(name, kind string) treeID {
	id := newTree(name)
	countedKinds[id] = kind
	return id
}

// ObjectCounts returns how many objects of each kind the state holds.
// Every count is kept by its tree: this does not walk the state.
func (s *State) ObjectCounts() map[string]int {
	out := make(map[string]int, len(countedKinds))
	for id, kind := range countedKinds {
		out[kind] = s.trees[id].Len()
	}
	return out
}

// TablesByFormat counts the tables of each format (DELTA, ICEBERG,
// LANCE, ...). It walks every table.
func (s *State) TablesByFormat() map[string]int {
	out := map[string]int{}
	s.trees[tableTree].Root().Walk(func(_ []byte, v any) bool {
		out[v.(*Table).Format]++
		return false
	})
	return out
}
