// Command river-bench is `millrace bench` with one more strategy, "river":
// River through its published Go module. It lives in its own Go module so
// that millrace's module does not depend on River. `millrace bench
// --strategies ...,river` runs it for you from a source checkout.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/millrace/millrace/internal/bench/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "bench" {
		args = args[1:]
	}
	if err := cli.Bench(ctx, args); err != nil {
		fmt.Fprintln(os.Stderr, "millrace bench:", err)
		var e *cli.Error
		if errors.As(err, &e) {
			os.Exit(e.Code) // 2 on bad flags, 130 when interrupted
		}
		os.Exit(1)
	}
}
