package ui_test

import "github.com/millrace/millrace/internal/testkit"

// exampleDatabase gives each runnable example a pool on a fresh database
// at the current schema.
var exampleDatabase = testkit.ExampleDB
