package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd is `chaos man DIR`: a man page (section 1) for chaos and each
// command shown in the help, written into DIR (make man).
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "man DIR",
		Short:   "write the man pages (section 1) into DIR",
		GroupID: groupMaint,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return status(mistake(c, "give one folder for the pages (chaos man DIR), got %d arguments", len(args)))
			}
			if err := writeMan(c.Root(), args[0]); err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "chaos man: %v\n", err)
				return status(exitHarness)
			}
			return nil
		},
	}
}

// writeMan writes root's pages into dir, creating it.
func writeMan(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	header := &doc.GenManHeader{Title: "CHAOS", Section: "1", Source: "zkchaos", Manual: "zkchaos manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("write the pages into %s: %w", dir, err)
	}
	return nil
}
