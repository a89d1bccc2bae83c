package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/kop-offsets/kop-offsets/internal/commands"
)

// profile runs kop-offsets in this process under the CPU profiler (and writes a heap profile
// at the end), so that `go tool pprof` shows where a command spends its time:
//
//	benchlab profile -cpu check.cpu -mem check.mem -- --config lab/run/config.yaml check --persisted-only -o json
func profile(args []string) (int, error) {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	cpu := fs.String("cpu", "cpu.pprof", "CPU profile file")
	mem := fs.String("mem", "", "heap profile file (in-use and allocated), written after the command")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	f, err := os.Create(*cpu)
	if err != nil {
		return 2, err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return 2, err
	}
	os.Args = append([]string{"kop-offsets"}, fs.Args()...)
	os.Stdout, _ = os.Open(os.DevNull)
	code := commands.Main()
	pprof.StopCPUProfile()
	if *mem != "" {
		m, err := os.Create(*mem)
		if err != nil {
			return 2, err
		}
		defer m.Close()
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(m, 0); err != nil {
			return 2, err
		}
	}
	fmt.Fprintf(os.Stderr, "benchlab: kop-offsets exited %d; profile in %s\n", code, *cpu)
	return code, nil
}
