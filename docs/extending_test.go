package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quoted is a file extending.md quotes: the marker names it, and the Go
// block right after the marker is its text.
var quoted = regexp.MustCompile("(?s)<!-- file: (\\S+) -->\n\n```go\n(.*?)```")

// TestExtendingQuotesItsFiles: every example extending.md quotes is
// byte for byte the file it names, so the page shows code that compiles
// and passes its test; every marker has its block; and each example is a
// _test.go file, so no example- name reaches the chaos binary.
func TestExtendingQuotesItsFiles(t *testing.T) {
	data, err := os.ReadFile("extending.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	blocks := quoted.FindAllStringSubmatch(text, -1)
	if markers := strings.Count(text, "<!-- file: "); markers != len(blocks) || len(blocks) == 0 {
		t.Fatalf("%d file markers, %d of them followed by a Go block", markers, len(blocks))
	}
	examples := 0
	for _, b := range blocks {
		path, block := b[1], b[2]
		file, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(path)))
		if err != nil {
			t.Errorf("extending.md quotes %s: %v", path, err)
			continue
		}
		if string(file) != block {
			t.Errorf("extending.md's block of %s differs from the file: copy the file into the page again", path)
		}
		if filepath.Base(path) == "example_extending_test.go" {
			examples++
		} else if strings.Contains(block, `"example-`) {
			t.Errorf("%s registers an example name and is not a _test.go file: chaos would list it", path)
		}
	}
	if examples != 5 {
		t.Errorf("%d example files quoted, want 5 (fault, checker, recipe, workload, backend)", examples)
	}
}
