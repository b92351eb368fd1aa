package guard_test

import (
	"fmt"

	"github.com/millrace/millrace/guard"
)

func ExampleParsePolicy() {
	p, err := guard.ParsePolicy("policy.yaml", []byte(`
interval: 1s
exempt_roles: [postgres_admin]
classes:
  - name: analytics
    match: {comment: {app: reports}, application_name: "report*"}
    max_transaction_age: 5m
    max_concurrent: 1
    horizon_window: 60s
    action: cancel
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := p.Classes[0]
	fmt.Println(c.Name, c.MaxConcurrent, c.MaxTransactionAge, c.HorizonWindow, c.Action)
	session := &guard.Holder{ApplicationName: "reporting", Tags: map[string]string{"app": "reports"}}
	fmt.Println(p.ClassOf(session).Name)

	_, err = guard.ParsePolicy("policy.yaml", []byte(`
classes:
  - name: analytics
    match: {application_name: "report*"}
    max_transaction_age: 5x
`))
	fmt.Println(err)
	// Output:
	// analytics 1 5m0s 1m0s cancel
	// analytics
	// policy.yaml:5: class "analytics": max_transaction_age: invalid duration "5x" (use e.g. 30s, 5m, 1h30m)
}
