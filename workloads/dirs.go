package workloads

import "strings"

// Dirs are the znodes under which w's clients create their own nodes: the
// nodes of w.Nodes() with none of the others beneath them (the lock: one
// directory per key; the election: the service's; config: the config
// node, which stays childless). The runbook's monitor lists them.
func Dirs(w Workload) []string {
	ns := w.Nodes()
	var out []string
	for _, n := range ns {
		leaf := true
		for _, o := range ns {
			if strings.HasPrefix(o.Path, n.Path+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			out = append(out, n.Path)
		}
	}
	return out
}
