package runner

import (
	"os"

	"github.com/zkchaos/zkchaos/report"
	"github.com/zkchaos/zkchaos/store"
)

// reportLinks are the raw files of the run that its report links, each
// only when the run folder has it: report.DefaultLinks names a logs/
// folder no run writes (the browser tests found the dead link), and a run
// has no register log on some backends or no server logs when it died
// early. The names are store's, the one owner of the folder's layout.
func reportLinks(run *store.Run) []report.Link {
	links := []report.Link{} // never nil: nil means report.DefaultLinks
	for _, l := range []report.Link{
		{Name: "history", Href: store.HistoryFile},
		{Name: "register apply log", Href: store.ApplyLogFile},
		{Name: "configuration", Href: store.TestFile},
		{Name: "results", Href: store.ResultsFile},
		{Name: "controller log", Href: store.LogFile},
		{Name: "janitor log", Href: store.JanitorLog},
		{Name: "register log", Href: store.RegisterLog},
		{Name: "server logs", Href: store.ZKDir + "/"},
		{Name: "worker logs", Href: store.WorkersDir + "/"},
	} {
		if _, err := os.Stat(run.Path(l.Href)); err == nil {
			links = append(links, l)
		}
	}
	return links
}
