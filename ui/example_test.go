package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/millrace/millrace/ui"
)

// The dashboard mounted under /queue/ in an application's own server.
// Every link and request of its pages is relative, so any prefix works;
// StripPrefix hands it paths from its own root.
func Example() {
	ctx := context.Background()
	pool := exampleDatabase() // a *pgxpool.Pool on a migrated database
	defer pool.Close()
	pool.Exec(ctx, "SELECT millrace.enqueue('email.send', '{\"to\":\"ada@example.com\"}', p_queue => 'email')")

	mux := http.NewServeMux()
	mux.Handle("/queue/", http.StripPrefix("/queue", ui.New(pool, ui.Options{
		BasicAuthUser: "ops", BasicAuthPassword: "correct horse", // or Token
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/queue/")
	if err != nil {
		panic(err)
	}
	fmt.Println("without credentials:", resp.Status)
	resp.Body.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/queue/api/overview", nil)
	req.SetBasicAuth("ops", "correct horse")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var overview struct {
		Queues []struct {
			Name      string
			Available int
			Paused    bool
		}
	}
	json.NewDecoder(resp.Body).Decode(&overview)
	for _, q := range overview.Queues {
		fmt.Printf("%s: %d available, paused %v\n", q.Name, q.Available, q.Paused)
	}
	// Output:
	// without credentials: 401 Unauthorized
	// email: 1 available, paused false
}
