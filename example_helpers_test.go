package millrace_test

import (
	"context"
	"fmt"
	"time"

	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

// exampleDatabase gives each runnable example a pool on a fresh database
// at the current schema (testkit.ExampleDB).
var exampleDatabase = testkit.ExampleDB

// waitFinished waits until job id has finished (completed, discarded or
// cancelled) and returns it with its history.
func waitFinished(ctx context.Context, db millrace.DB, id int64) millrace.JobInfo {
	var j millrace.JobInfo
	var err error
	if !testkit.Until(30*time.Second, func() bool {
		j, err = millrace.JobByID(ctx, db, id)
		return err == nil && (j.State == millrace.JobCompleted || j.State == millrace.JobDiscarded || j.State == millrace.JobCancelled)
	}) {
		panic(fmt.Sprintf("job %d did not finish: state %q, err %v", id, j.State, err))
	}
	return j
}

// waitState waits until job id is in state and returns it.
func waitState(ctx context.Context, db millrace.DB, id int64, state millrace.JobState) millrace.JobInfo {
	var j millrace.JobInfo
	var err error
	if !testkit.Until(30*time.Second, func() bool {
		j, err = millrace.JobByID(ctx, db, id)
		return err == nil && j.State == state
	}) {
		panic(fmt.Sprintf("job %d is not %s: state %q, err %v", id, state, j.State, err))
	}
	return j
}

// printAttempts prints a job's finished attempts, oldest first.
func printAttempts(j millrace.JobInfo) {
	for _, a := range j.Attempts {
		if a.Error != "" {
			fmt.Printf("attempt %d %s: %s\n", a.Attempt, a.State, a.Error)
		} else {
			fmt.Printf("attempt %d %s\n", a.Attempt, a.State)
		}
	}
}
