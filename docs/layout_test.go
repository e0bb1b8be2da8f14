package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/zkchaos/zkchaos/"

// layerOrder reads the import order architecture.md states ("Imports flow
// one way, top to bottom in the order `cmd`, `run`, ...:"), so the test
// and the page cannot say two different things.
func layerOrder(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	m := regexp.MustCompile(`Imports flow one way\*\*, top to bottom in the order ([^:]+):`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("architecture.md no longer states the import order (\"**Imports flow one way**, top to bottom in the order ...:\")")
	}
	var order []string
	for _, w := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(m[1], -1) {
		order = append(order, w[1])
	}
	return order
}

// TestImportsFlowOneWay: no non-test file imports a package of a
// top-level folder above its own in the stated order, and every
// top-level folder with Go code is in the order. internal/testkit is
// test-only and exempt; tests/ and compose/ hold only tests.
func TestImportsFlowOneWay(t *testing.T) {
	order := layerOrder(t)
	rank := func(dir string) int { return slices.Index(order, strings.SplitN(dir, "/", 2)[0]) }
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "tests" || rel == "compose" || rel == "docs" || rel == "internal/testkit" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		from := rank(filepath.ToSlash(rel))
		if from < 0 {
			t.Errorf("%s: its top-level folder is not in architecture.md's import order %v", rel, order)
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			if to := rank(strings.TrimPrefix(p, module)); to < from {
				t.Errorf("%s imports %s, a folder above its own", rel, strings.TrimPrefix(p, module))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTopLevelFolders: the top level stays readable as the stages of a
// run: at most 14 folders besides docs/, scripts/ and tests/ (build and
// run outputs, bin/, man/ and results/, are not part of the tree).
func TestTopLevelFolders(t *testing.T) {
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() && !strings.HasPrefix(n, ".") && !slices.Contains([]string{"docs", "scripts", "tests", "bin", "man", "results"}, n) {
			dirs = append(dirs, n)
		}
	}
	if len(dirs) > 14 {
		t.Errorf("%d top-level folders besides docs/, scripts/ and tests/: %v; at most 14", len(dirs), dirs)
	}
}
