package monitor

// Churn is how many nodes were created in and deleted from one lock
// directory between the first and the last sample that read it.
type Churn struct {
	Path string
	// Creates and Deletes come from the directory's cversion (one per
	// child created or deleted) and child count: exact over the span,
	// whether or not a sample saw the node.
	Creates, Deletes int64
	// FromNS and ToNS are the span (run clock) of the samples used.
	FromNS, ToNS int64
	// Reads is the number of samples that read the directory; Resets
	// the spans left out because cversion went down (the directory was
	// deleted and created again).
	Reads, Resets int
}

// Churns measures every directory the samples read, in the order of the
// first sample's directories.
func Churns(samples []Sample) []Churn {
	var out []Churn
	at := map[string]int{}
	last := map[string]Dir{}
	for _, s := range samples {
		for _, d := range s.Dirs {
			if d.Error != "" {
				continue
			}
			i, ok := at[d.Path]
			if !ok {
				at[d.Path] = len(out)
				out = append(out, Churn{Path: d.Path, FromNS: s.TimeNS})
				i = len(out) - 1
			}
			c := &out[i]
			c.Reads++
			c.ToNS = s.TimeNS
			prev, seen := last[d.Path]
			last[d.Path] = d
			if !seen {
				continue
			}
			dc := int64(d.Cversion) - int64(prev.Cversion)
			dn := int64(d.NumChildren) - int64(prev.NumChildren)
			if dc < 0 || (dc+dn)%2 != 0 || dc < dn || dc < -dn {
				c.Resets++
				continue
			}
			c.Creates += (dc + dn) / 2
			c.Deletes += (dc - dn) / 2
		}
	}
	return out
}
