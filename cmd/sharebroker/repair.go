package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sharebroker/sharebroker/broker"
)

// newRepairCommand is `sharebroker repair-data-dir DIR`, the way out of a
// start refused for corruption (docs/durability.md repair-data-dir).
func newRepairCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "repair-data-dir DIR",
		Short: "Cut the corrupt files of a stopped broker's data directory, keeping and reporting what is cut",
		Long: "repair-data-dir does on purpose what a start refuses to do quietly: each file of the data\n" +
			"directory DIR that recovery finds corrupt is cut at the byte it names; the cut bytes, and the\n" +
			"later segments of a cut partition, are moved to DIR/lost+found; every cut and move is printed\n" +
			"with the whole batches (records, offsets) or metadata records it held. No broker may be running\n" +
			"on DIR. See docs/durability.md, repair-data-dir.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := broker.RepairDataDir(args[0])
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), rep)
			return nil
		},
	}
}
