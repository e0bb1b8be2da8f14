package chaostest

import (
	"encoding/xml"
	"os"
	"testing"
)

// JUnitCases reads a JUnit file that chaos test-all or chaos gate wrote:
// the names of its test cases, and of those that failed.
func JUnitCases(t *testing.T, path string) (all, failed []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			all = append(all, c.Name)
			if c.Failure != nil {
				failed = append(failed, c.Name)
			}
		}
	}
	return all, failed
}
