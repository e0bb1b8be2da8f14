package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/zkchaos/zkchaos/report/compare"
	"github.com/zkchaos/zkchaos/report/runview"
)

// compare renders the compare page of runs a and b (their paths in the
// results folder, as the index's form sends them). Only runs the listing
// finds are accepted, so the query names runs, never arbitrary paths.
func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pa, pb := q.Get("a"), q.Get("b")
	if pa == "" || pb == "" {
		http.Error(w, "compare needs two runs: /_compare?a=RUN&b=RUN (paths as the index lists them)", http.StatusBadRequest)
		return
	}
	if pa == pb {
		http.Error(w, "A and B are the same run; pick two different runs", http.StatusBadRequest)
		return
	}
	l, err := runview.List(s.fsys)
	if err != nil {
		http.Error(w, "cannot list the results folder: "+err.Error(), http.StatusInternalServerError)
		return
	}
	sides := make([]compare.Side, 2)
	for i, p := range []string{pa, pb} {
		run, status, err := s.load(l, p)
		if err != nil {
			http.Error(w, err.Error(), status)
			return
		}
		// The page is served at /_compare: a run's folder, relative to
		// it, is its path in the results folder.
		sides[i] = compare.Side{Run: run, Href: p}
	}
	page, err := compare.Render(sides[0], sides[1])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pageCSP)
	_, _ = w.Write(page)
}

// load reads the listed run at path p whole, or says why not with the
// status to answer.
func (s *Server) load(l runview.Listing, p string) (*runview.Run, int, error) {
	listed := false
	for _, e := range l.Runs {
		listed = listed || e.Path == p
	}
	if !listed {
		return nil, http.StatusNotFound, fmt.Errorf("no run %q in this results folder", p)
	}
	sub, err := fs.Sub(s.fsys, p)
	if err != nil {
		return nil, http.StatusNotFound, fmt.Errorf("run %q: %w", p, err)
	}
	run, err := runview.Load(sub, p)
	switch {
	case errors.Is(err, runview.ErrUnchecked):
		return nil, http.StatusConflict, fmt.Errorf("run %s has no results.json (never checked): run `chaos check` on it first", p)
	case err != nil:
		return nil, http.StatusInternalServerError, fmt.Errorf("run %s: %w", p, err)
	}
	return run, 0, nil
}
