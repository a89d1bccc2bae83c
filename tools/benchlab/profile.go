package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands"
)

// profile runs kop-offsets in this process under the CPU profiler, so that `go tool pprof`
// shows where a command spends its time, and keeps a heap profile taken near the peak of the
// heap (checked every 200 ms), which shows what holds the memory:
//
//	benchlab profile -cpu check.cpu -mem check.heap -- --config lab/run/config.yaml check --persisted-only -o json
func profile(args []string) (int, error) {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	cpu := fs.String("cpu", "cpu.pprof", "CPU profile file")
	mem := fs.String("mem", "", "heap profile file, rewritten whenever the heap grew by 10% (in use near the peak, and allocations)")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	f, err := os.Create(*cpu)
	if err != nil {
		return 2, err
	}
	defer func() { _ = f.Close() }()
	if err := pprof.StartCPUProfile(f); err != nil {
		return 2, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	if *mem != "" {
		wg.Go(func() {
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak+peak/10 {
					peak = ms.HeapInuse
					if m, err := os.Create(*mem); err == nil {
						_ = pprof.Lookup("heap").WriteTo(m, 0)
						_ = m.Close()
					}
				}
			}
		})
	}
	os.Args = append([]string{"kop-offsets"}, fs.Args()...)
	if devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		os.Stdout = devNull
	}
	code := commands.Main()
	pprof.StopCPUProfile()
	close(done)
	wg.Wait()
	fmt.Fprintf(os.Stderr, "benchlab: kop-offsets exited %d; CPU profile %s, heap profile %s (heap in use at most %d MiB)\n", code, *cpu, *mem, peak>>20)
	return code, nil
}
