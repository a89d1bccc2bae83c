// Command benchlab measures kop-offsets on the lab beside references, for make bench-lab and
// docs/performance.md. It is test tooling, not part of the product.
//
//	benchlab run [--sizes 2000,10000] [--runs 3] ...   load the lab at each size, print the tables
//	benchlab drain [--service-url URL,...]              the plain reader (the reference of a replay)
//	benchlab profile -cpu F [-mem F] -- ARGS            run kop-offsets ARGS in-process under pprof
//
// run starts the lab over fresh data and stops it at the end; hold the lab lock around it
// (make bench-lab does: flock /tmp/kop-lab.flock).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fail(errors.New("usage: benchlab run|drain|profile [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runBench(ctx, os.Args[2:])
	case "drain":
		err = drain(ctx, os.Args[2:])
	case "profile":
		var code int
		code, err = profile(os.Args[2:])
		if err == nil {
			stop()
			os.Exit(code) //nolint:gocritic // stop() ran just above
		}
	default:
		err = fmt.Errorf("unknown command %q: want run, drain or profile", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchlab:", err)
	os.Exit(1)
}
