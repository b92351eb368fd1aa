package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestPackage: the millrace program links no test
// support: the bench's throwaway cluster and pooler come from
// millracetest/pgcluster, which does not import testing.
func TestBinaryLinksNoTestPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	for _, bad := range []string{"testing", "github.com/millrace/millrace/internal/testkit", "github.com/millrace/millrace/internal/testkit/clientkit"} {
		if slices.Contains(deps, bad) {
			t.Errorf("the millrace program links %s", bad)
		}
	}
}
