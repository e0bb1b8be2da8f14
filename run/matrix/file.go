package matrix

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/workloads"
)

// fileCell is one cell of a --matrix file, as a team writes it.
type fileCell struct {
	Recipe  string `json:"recipe" yaml:"recipe"`
	Variant string `json:"variant" yaml:"variant"`
	// Workload is the cell's --workload ("" is the lock); its checkers
	// are the ones expect may name.
	Workload string            `json:"workload" yaml:"workload"`
	Nemesis  []string          `json:"nemesis" yaml:"nemesis"`
	Fencing  string            `json:"fencing" yaml:"fencing"`
	Args     []string          `json:"args" yaml:"args"`
	Expect   map[string]string `json:"expect" yaml:"expect"`
	Why      string            `json:"why" yaml:"why"`
}

// pos is a place in a file, 1-based.
type pos struct{ line, col int }

// LoadFile reads a --matrix file: a JSON array of cells, or a YAML list
// of them when the name ends in .yaml or .yml. A cell's recipe defaults
// to recipe; nemesis to none; fencing to on. Decoding is strict (an
// unknown field is an error, so a misspelt "expect" never silently
// expects nothing) and every error starts with FILE:LINE:COL.
// knownNemesis checks a nemesis list (the caller links the faults).
func LoadFile(path, recipe string, knownNemesis func([]string) error) ([]Cell, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("matrix file: %w", err)
	}
	var fcs []fileCell
	var at []pos
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		fcs, at, err = decodeYAML(data)
	default:
		fcs, at, err = decodeJSON(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	if len(fcs) == 0 {
		return nil, fmt.Errorf("%s:1:1: no cells", path)
	}
	cells := make([]Cell, 0, len(fcs))
	seen := map[string]pos{}
	for i, fc := range fcs {
		c, err := fc.cell(recipe, knownNemesis)
		if err == nil {
			if p, dup := seen[c.Name()]; dup {
				err = fmt.Errorf("cell %s is also at line %d: give one a \"variant\"", c.Name(), p.line)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d:%d: %w", path, at[i].line, at[i].col, err)
		}
		seen[c.Name()] = at[i]
		cells = append(cells, c)
	}
	return cells, nil
}

// cell checks a file cell and fills its defaults.
func (fc fileCell) cell(recipe string, knownNemesis func([]string) error) (Cell, error) {
	c := Cell{Recipe: fc.Recipe, Variant: fc.Variant, Workload: fc.Workload, Nemesis: fc.Nemesis, Fencing: fc.Fencing,
		Args: fc.Args, Why: fc.Why, Expect: map[string]checker.Validity{}}
	if c.Recipe == "" || c.Recipe == recipe {
		c.Recipe, c.Label = recipe, "subject"
	}
	if c.Recipe == "" {
		return c, fmt.Errorf("cell has no \"recipe\" and no %s was given", setting.Name("Recipe"))
	}
	if len(c.Nemesis) == 0 {
		c.Nemesis = []string{"none"}
	}
	if knownNemesis != nil {
		if err := knownNemesis(c.Nemesis); err != nil {
			return c, err
		}
	}
	switch c.Fencing {
	case "":
		c.Fencing = "on"
	case "on", "off":
	default:
		return c, fmt.Errorf("fencing %q: give on or off", c.Fencing)
	}
	if len(fc.Expect) == 0 {
		return c, errors.New("cell has no \"expect\": a cell that expects nothing proves nothing")
	}
	if slices.ContainsFunc(c.Args, isWorkloadFlag) {
		return c, errors.New("args: give the workload as the cell's \"workload\", whose checkers \"expect\" names")
	}
	spec, err := workloads.Lookup(cmp.Or(c.Workload, workloads.LockName))
	if err != nil {
		return c, fmt.Errorf("workload: %w", err)
	}
	known := workloads.CheckerNames(spec)
	for _, name := range sortedKeys(fc.Expect) {
		if !slices.Contains(known, name) {
			return c, fmt.Errorf("expect: unknown checker %q of the %s workload (known: %s)", name, spec.Name(), strings.Join(known, ", "))
		}
		switch fc.Expect[name] {
		case "valid":
			c.Expect[name] = checker.Valid
		case "invalid":
			c.Expect[name] = checker.Invalid
		default:
			return c, fmt.Errorf("expect %s: %q: give valid or invalid", name, fc.Expect[name])
		}
	}
	return c, nil
}

// isWorkloadFlag says whether a is chaos run's --workload (or -workload,
// with or without =VALUE), which a cell gives as its "workload" instead:
// its expect is checked against that workload's checkers.
func isWorkloadFlag(a string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
	return strings.HasPrefix(a, "-") && name == "workload"
}

// decodeJSON reads a JSON array of cells one element at a time, so that
// each cell's position is known for the errors found after decoding.
func decodeJSON(data []byte) ([]fileCell, []pos, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, nil, fmt.Errorf("%s: the file must be a JSON array of cells", posAt(data, dec.InputOffset()))
	}
	var fcs []fileCell
	var at []pos
	for dec.More() {
		start := skipSpace(data, dec.InputOffset())
		var fc fileCell
		if err := dec.Decode(&fc); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", posAt(data, jsonErrOffset(data, start, err)), err)
		}
		fcs = append(fcs, fc)
		at = append(at, lineCol(data, start))
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", posAt(data, dec.InputOffset()), err)
	}
	return fcs, at, nil
}

var unknownField = regexp.MustCompile(`^json: unknown field (".*")$`)

// jsonErrOffset is where err happened: the decoder's own offset for
// syntax and type errors, the field's name for an unknown field (the
// decoder gives none), else the cell's start.
func jsonErrOffset(data []byte, start int64, err error) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		if i := bytes.Index(data[start:], []byte(m[1]+":")); i >= 0 {
			return start + int64(i)
		}
		if i := bytes.Index(data[start:], []byte(m[1])); i >= 0 {
			return start + int64(i)
		}
	}
	return start
}

func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.ContainsRune(" \t\r\n,", rune(data[off])) {
		off++
	}
	return off
}

func lineCol(data []byte, off int64) pos {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	return pos{line, int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1}
}

func posAt(data []byte, off int64) string {
	p := lineCol(data, off)
	return strconv.Itoa(p.line) + ":" + strconv.Itoa(p.col)
}

// decodeYAML reads a YAML list of cells: strictly (KnownFields) for the
// values, then as a node tree for each cell's position.
func decodeYAML(data []byte) ([]fileCell, []pos, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, yamlErr(err)
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.SequenceNode {
		return nil, nil, errors.New("1:1: the file must be a YAML list of cells")
	}
	var fcs []fileCell
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fcs); err != nil {
		return nil, nil, yamlErr(err)
	}
	var at []pos
	for _, n := range root.Content[0].Content {
		at = append(at, pos{n.Line, n.Column})
	}
	return fcs, at, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)(?:, column (\d+))?: `)

// yamlErr puts the line of yaml's first error in front, as LINE:COL, and
// keeps that error alone on the line (yaml lists them one per line).
func yamlErr(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		err = errors.New(te.Errors[0])
	}
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("1:1: %w", err)
	}
	col := m[2]
	if col == "" {
		col = "1"
	}
	return fmt.Errorf("%s:%s: %s", m[1], col, strings.Replace(err.Error(), m[0], "", 1))
}
