package millracetest_test

import (
	"fmt"
	"testing"

	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// exampleDatabase gives each runnable example a pool on a fresh database
// at the current schema.
var exampleDatabase = testkit.ExampleDB

// printT stands in for the *testing.T of a real test in the examples: it
// prints what a failing assertion reports instead of failing the example.
type printT struct{ testing.TB }

func (printT) Helper() {}

func (printT) Fatalf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }
