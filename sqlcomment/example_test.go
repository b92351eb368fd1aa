package sqlcomment_test

import (
	"fmt"

	"github.com/millrace/millrace/sqlcomment"
)

func Example() {
	sql := sqlcomment.Tag("SELECT * FROM orders WHERE day = $1;", map[string]string{
		"app":    "reports",
		"action": "daily close",
	})
	fmt.Println(sql)
	fmt.Println(sqlcomment.Parse(sql)["action"])
	// Output:
	// SELECT * FROM orders WHERE day = $1 /*action='daily%20close',app='reports'*/;
	// daily close
}
