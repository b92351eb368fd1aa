package main

import "github.com/millrace/millrace/internal/bench/cli"

func init() {
	register(&command{name: "bench", summary: "reproduce queue collapse under a pinned horizon, side by side, and draw it", run: cli.Bench})
}
