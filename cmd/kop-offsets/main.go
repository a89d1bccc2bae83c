// Command kop-offsets inspects, compares and repairs KoP consumer offsets across
// geo-replicated Pulsar clusters.
package main

import (
	"os"

	"github.com/kop-offsets/kop-offsets/internal/commands"
)

func main() { os.Exit(commands.Main()) }
