package schema

// What the tests (package schema_test, apart so that they can use package
// testkit, which imports this one) read of the package's internals.
var (
	Files         = files
	FunctionFiles = functionFiles
)

const FunctionsSince = functionsSince
