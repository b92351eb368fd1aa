// Package ui is millrace's web dashboard: queues at a glance with live
// throughput and latency charts, jobs by state with search, a page per job
// with every attempt, operator actions (retry, cancel, pause, resume) for a
// role allowed to take them, and the horizon: everything that holds back
// PostgreSQL's MVCC horizon, for how long, in which workload class, and
// what it costs in dead tuples.
//
// The dashboard is an http.Handler; mount it anywhere in your own server:
//
//	mux.Handle("/queue/", http.StripPrefix("/queue", ui.New(pool, ui.Options{})))
//
// Its assets (HTML, CSS, a small hand-written script that draws the charts
// as SVG) are embedded: it fetches nothing from the network. The command
// `millrace ui` serves it on its own.
package ui

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/guard"
	"github.com/millrace/millrace/internal/ops"
)

//go:embed assets
var assets embed.FS

// Options configure the dashboard. The zero value serves every page to
// anyone who can reach it, and offers the actions the database role may
// take.
type Options struct {
	// Token, when set, is required of every request: as a bearer token
	// (Authorization: Bearer TOKEN), or once in the query string
	// (?token=TOKEN), which sets a cookie for the browser that asked.
	Token string
	// BasicAuthUser and BasicAuthPassword, when set, require HTTP basic
	// authentication of every request. Token and basic auth may be used
	// together: either is then enough.
	BasicAuthUser, BasicAuthPassword string
	// AllowedHosts are the host names, besides localhost, *.localhost and
	// IP addresses, that the dashboard may be reached as (the Host a
	// browser sends, without its port): "queue.example.com" that name,
	// ".example.com" that domain and every name under it, "*" any name. A
	// request for another name is refused, so that a page of another site
	// whose name was made to resolve to the dashboard's address (DNS
	// rebinding) can neither read it nor act on it. Behind a reverse proxy,
	// list the name the browser uses.
	AllowedHosts []string
	// ReadOnly hides and refuses every action, whatever the role may do.
	ReadOnly bool
	// Policy, when set, names the workload class of each session on the
	// horizon page and shows what the guard would do under it (the guard
	// is run in dry run by the dashboard; it signals nothing). PolicyName
	// says where it came from (a file name).
	Policy     *guard.Policy
	PolicyName string
	// Logger receives errors (nil: discard).
	Logger *slog.Logger
}

type handler struct {
	pool    *pgxpool.Pool
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	tmpl    map[string]*template.Template
	static  http.Handler
	live    *sampler
	horizon *horizon
}

// New returns the dashboard over pool. Give it a role that may read the
// schema (millrace_worker or millrace_admin); actions are offered only when
// the role may execute the schema's operator functions (millrace_admin).
// The horizon page reads pg_stat_activity: with pg_monitor it sees other
// roles' query texts.
func New(pool *pgxpool.Pool, opts Options) http.Handler {
	h := &handler{pool: pool, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h.live = newSampler(pool)
	h.horizon = newHorizon(pool, opts.Policy)
	funcs := template.FuncMap{
		"ago":      ago,
		"took":     took,
		"ts":       stamp,
		"pretty":   prettyJSON,
		"idle":     func(t *time.Time) bool { return t == nil },
		"deref":    func(t *time.Time) time.Time { return *t },
		"finished": func(s string) bool { return s != "available" && s != "running" && s != "scheduled" },
	}
	h.tmpl = map[string]*template.Template{}
	for _, page := range []string{"queues", "jobs", "job", "horizon", "denied"} {
		h.tmpl[page] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+page+".html"))
	}
	h.static = http.FileServerFS(assets)

	m := h.mux
	m.HandleFunc("GET /{$}", h.queuesPage)
	m.HandleFunc("GET /jobs", h.jobsPage)
	m.HandleFunc("GET /jobs/{id}", h.jobPage)
	m.HandleFunc("GET /horizon", h.horizonPage)
	m.HandleFunc("GET /api/overview", h.apiOverview)
	m.HandleFunc("GET /api/horizon", h.apiHorizon)
	m.HandleFunc("GET /api/jobs", h.apiJobs)
	m.HandleFunc("GET /api/jobs/{id}", h.apiJob)
	m.HandleFunc("POST /jobs/{id}/cancel", h.jobAction)
	m.HandleFunc("POST /jobs/{id}/retry", h.jobAction)
	m.HandleFunc("POST /queue/pause", h.queueAction)
	m.HandleFunc("POST /queue/resume", h.queueAction)
	m.HandleFunc("POST /queue/limit", h.limitAction)
	m.Handle("GET /assets/", h.static)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	if host, ok := h.servedAs(r); !ok {
		http.Error(w, "this dashboard is not served as "+strconv.Quote(host)+": an operator may add that name to its allowed hosts (millrace ui --allowed-hosts, ui.Options.AllowedHosts)", http.StatusForbidden)
		return
	}
	if !h.authorized(w, r) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !h.sameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// servedAs checks that the request names the dashboard by a host it is
// served as: its Host and, from a reverse proxy, the host the browser
// asked for (X-Forwarded-Host, Forwarded). It returns the first name that
// is not allowed.
func (h *handler) servedAs(r *http.Request) (string, bool) {
	// A browser always sends Host; a request without one is a program's.
	if r.Host != "" && !h.hostAllowed(r.Host) {
		return r.Host, false
	}
	for _, v := range r.Header.Values("X-Forwarded-Host") {
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); !h.hostAllowed(x) {
				return x, false
			}
		}
	}
	for _, v := range r.Header.Values("Forwarded") {
		for _, part := range strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ';' }) {
			k, x, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok || !strings.EqualFold(k, "host") {
				continue
			}
			if x = strings.Trim(x, `"`); !h.hostAllowed(x) {
				return x, false
			}
		}
	}
	return "", true
}

// hostAllowed reports whether host (with or without a port) is one the
// dashboard is served as: an IP address (a browser that sends one connected
// to it: no name was resolved, so none could be rebound), localhost and
// its subdomains (browsers resolve them to the loopback address
// themselves), or a name in Options.AllowedHosts.
func (h *handler) hostAllowed(host string) bool {
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	name = strings.TrimSuffix(strings.ToLower(strings.Trim(name, "[]")), ".")
	if name == "" {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	for _, a := range h.opts.AllowedHosts {
		a = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(a)), ".")
		switch {
		case a == "*":
			return true
		case strings.HasPrefix(a, "*."):
			a = a[1:]
		}
		if a == name || (strings.HasPrefix(a, ".") && (name == a[1:] || strings.HasSuffix(name, a))) {
			return true
		}
	}
	return false
}

const tokenCookie = "millrace_ui_token"

// authorized checks the token or basic credentials, if any are set. A
// valid ?token= sets a cookie and redirects to the same page without it.
func (h *handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.Token == "" && h.opts.BasicAuthUser == "" {
		return true
	}
	eq := func(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	if t := h.opts.Token; t != "" {
		if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") && eq(strings.TrimPrefix(a, "Bearer "), t) {
			return true
		}
		if c, err := r.Cookie(tokenCookie); err == nil && eq(c.Value, t) {
			return true
		}
		if q := r.URL.Query().Get("token"); q != "" && eq(q, t) && r.Method == http.MethodGet {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: t, Path: mountPath(r), HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			q := r.URL.Query()
			q.Del("token")
			rel := lastSegment(r.URL.Path)
			if len(q) > 0 {
				rel += "?" + q.Encode()
			}
			seeOther(w, rel)
			return false
		}
	}
	if h.opts.BasicAuthUser != "" {
		if u, p, ok := r.BasicAuth(); ok && eq(u, h.opts.BasicAuthUser) && eq(p, h.opts.BasicAuthPassword) {
			return true
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="millrace", charset="UTF-8"`)
	}
	http.Error(w, "unauthorized: this dashboard needs its token (open it once with ?token=TOKEN, or send Authorization: Bearer TOKEN) or its basic-auth credentials", http.StatusUnauthorized)
	return false
}

// sameOrigin refuses what a browser marks as coming from another site.
// Browsers send Origin (and Sec-Fetch-Site) with every POST; a request
// with neither comes from a program, not a page, and carries its own
// credentials. An Origin must name a host the dashboard is served as (a
// page of a rebound name is same-origin with itself) and the host the
// request was sent to.
func (h *handler) sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || !h.hostAllowed(u.Host) {
		return false
	}
	// Behind a reverse proxy that rewrites Host, the proxy's
	// X-Forwarded-Host names the site the browser saw (servedAs checked
	// that it is allowed).
	return strings.EqualFold(u.Host, r.Host) || (r.Header.Get("X-Forwarded-Host") != "" && strings.EqualFold(u.Host, r.Header.Get("X-Forwarded-Host")))
}

// mountPath is the path under which the handler is mounted: the request's
// original path less what is left of it after any StripPrefix.
func mountPath(r *http.Request) string {
	orig := r.RequestURI
	if i := strings.IndexByte(orig, '?'); i >= 0 {
		orig = orig[:i]
	}
	if p := strings.TrimSuffix(orig, r.URL.Path); p != orig || r.URL.Path == "" {
		return p + "/"
	}
	return "/"
}

// base is the relative path from the request's page to the dashboard's
// root ("./", "../"): every link and fetch is relative, so that the
// dashboard works under any prefix.
func base(r *http.Request) string {
	n := strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if n == 0 {
		return "./"
	}
	return strings.Repeat("../", n)
}

func lastSegment(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	if p == "" {
		return "./"
	}
	return p
}

// seeOther redirects with a relative Location, resolved by the browser
// against the URL it asked for (http.Redirect would make it absolute from
// the path left after StripPrefix).
func seeOther(w http.ResponseWriter, loc string) {
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusSeeOther)
}

// page is what every template gets (render fills Base, Nav, Msg, Can,
// ReadOnly and Setup).
type page struct {
	Base     string
	Title    string
	Nav      string
	Msg      string
	Can      ops.Privileges
	ReadOnly bool
	// Setup is what the database lacks, in one line ("": nothing).
	Setup string
	Data  any
}

// setup says in one line what the database lacks for the dashboard: its
// schema, or the migrations this dashboard needs. It is "" when the schema
// is migrated, or when that cannot be read (the error that follows says
// why).
func (h *handler) setup(ctx context.Context) string {
	have, want, err := ops.SchemaVersions(ctx, h.pool)
	switch {
	case err != nil || have >= want:
		return ""
	case have == 0:
		return "This database has no millrace schema: run millrace migrate up (or call millrace.Migrate) to create it."
	}
	return fmt.Sprintf("The millrace schema of this database is at version %d and this dashboard needs version %d: run millrace migrate up.", have, want)
}

// explain is err in one line or, when the database lacks the schema, what
// to run; setup tells which.
func (h *handler) explain(ctx context.Context, err error) (msg string, setup bool) {
	if s := h.setup(ctx); s != "" {
		return s, true
	}
	return oneLine(err), false
}

func (h *handler) render(w http.ResponseWriter, r *http.Request, name string, status int, p page) {
	p.Base = base(r)
	p.Nav = name
	p.Msg = redact(r.URL.Query().Get("msg"))
	p.ReadOnly = h.opts.ReadOnly
	if p.Setup == "" {
		p.Setup = h.setup(r.Context())
	}
	if p.Setup == "" {
		if can, err := h.can(r.Context()); err == nil {
			p.Can = can
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := h.tmpl[name].Execute(w, p); err != nil {
		h.log.Error("ui: render", "page", name, "error", oneLine(err))
	}
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	msg, setup := h.explain(r.Context(), err)
	if setup {
		h.render(w, r, "denied", http.StatusServiceUnavailable, page{Title: "No millrace schema", Setup: msg})
		return
	}
	h.log.Error("ui: request failed", "path", r.URL.Path, "error", msg)
	h.render(w, r, "denied", http.StatusInternalServerError, page{Title: "Error", Data: msg})
}

// oneLine is an error in one line, its passwords redacted.
func oneLine(err error) string {
	return redact(strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " "))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

func (h *handler) jsonError(w http.ResponseWriter, r *http.Request, status int, err error) {
	msg := oneLine(err)
	if status >= 500 {
		var setup bool
		if msg, setup = h.explain(r.Context(), err); setup {
			status = http.StatusServiceUnavailable
		} else {
			h.log.Error("ui: request failed", "path", r.URL.Path, "error", msg)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// can is what the role may do, less everything when read-only.
func (h *handler) can(ctx context.Context) (ops.Privileges, error) {
	if h.opts.ReadOnly {
		return ops.Privileges{}, nil
	}
	return ops.Can(ctx, h.pool)
}

func (h *handler) queuesPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, "queues", http.StatusOK, page{Title: "Queues"})
}

// overview is the JSON the queues page polls every second.
type overview struct {
	Queues  []ops.Queue    `json:"queues"`
	Samples []ops.Sample   `json:"samples"`
	Can     ops.Privileges `json:"can"`
	// Setup is what the database lacks, when the page asks (?setup=1: it
	// shows that, and reloads once it changes).
	Setup string `json:"setup,omitempty"`
}

func (h *handler) apiOverview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	qs, samples, err := h.live.get(ctx)
	if err != nil {
		h.jsonError(w, r, http.StatusInternalServerError, err)
		return
	}
	can, err := h.can(ctx)
	if err != nil {
		h.jsonError(w, r, http.StatusInternalServerError, err)
		return
	}
	if qs == nil {
		qs = []ops.Queue{}
	}
	ov := overview{Queues: qs, Samples: samples, Can: can}
	if r.URL.Query().Get("setup") != "" {
		ov.Setup = h.setup(ctx)
	}
	writeJSON(w, ov)
}

func filterOf(q url.Values) (ops.Filter, error) {
	f := ops.Filter{Queue: strings.TrimSpace(q.Get("queue")), Kind: strings.TrimSpace(q.Get("kind")), State: q.Get("state")}
	if s := strings.TrimSpace(q.Get("id")); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return f, errors.New("id must be a positive number")
		}
		f.ID = id
	}
	if !ops.ValidState(f.State) {
		return f, errors.New("unknown state " + strconv.Quote(f.State))
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return f, errors.New("limit must be a positive number")
		}
		f.Limit = n
	}
	return f, nil
}

type jobsData struct {
	Filter ops.Filter
	Jobs   []jobView
	States []string
	Error  string
}

func (h *handler) jobsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d := jobsData{States: append(append([]string{}, ops.LiveStates...), ops.FinishedStates...)}
	f, err := filterOf(r.URL.Query())
	d.Filter = f
	status := http.StatusOK
	if err == nil {
		var jobs []ops.Job
		jobs, err = ops.ListJobs(ctx, h.pool, f)
		d.Jobs = h.views(ctx, jobs)
	} else {
		status = http.StatusBadRequest
	}
	var p page
	if err != nil && status == http.StatusOK {
		var setup bool
		if d.Error, setup = h.explain(ctx, err); setup {
			p.Setup, d.Error, status = d.Error, "", http.StatusServiceUnavailable
		} else {
			h.log.Error("ui: jobs", "error", d.Error)
			status = http.StatusInternalServerError
		}
	} else if err != nil {
		d.Error = oneLine(err)
	}
	p.Title, p.Data = "Jobs", d
	h.render(w, r, "jobs", status, p)
}

func (h *handler) apiJobs(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r.URL.Query())
	if err != nil {
		h.jsonError(w, r, http.StatusBadRequest, err)
		return
	}
	jobs, err := ops.ListJobs(r.Context(), h.pool, f)
	if err != nil {
		h.jsonError(w, r, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, h.views(r.Context(), jobs))
}

func jobID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errors.New("a job id is a positive number")
	}
	return id, nil
}

type jobData struct {
	Job    jobDetailView
	Latest *jobView
	// Args are the job's arguments (jobDetailView.Args); ArgsNotKept says
	// why there are none.
	Args        json.RawMessage
	ArgsNotKept string
}

func (h *handler) jobPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := jobID(r)
	if err != nil {
		h.render(w, r, "denied", http.StatusBadRequest, page{Title: "Bad request", Data: err.Error()})
		return
	}
	d, err := h.getJob(ctx, id)
	if errors.Is(err, ops.ErrNotFound) {
		h.render(w, r, "denied", http.StatusNotFound, page{Title: "Not found", Data: "job " + strconv.FormatInt(id, 10) + ": " + err.Error()})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, "job", http.StatusOK, page{Title: "Job " + strconv.FormatInt(id, 10), Data: jobData{Job: d, Latest: d.Latest(), Args: d.Args(), ArgsNotKept: ops.ArgsNotKept}})
}

func (h *handler) apiJob(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		h.jsonError(w, r, http.StatusBadRequest, err)
		return
	}
	d, err := h.getJob(r.Context(), id)
	if errors.Is(err, ops.ErrNotFound) {
		h.jsonError(w, r, http.StatusNotFound, err)
		return
	}
	if err != nil {
		h.jsonError(w, r, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, d)
}

// jobAction is POST jobs/{id}/cancel or jobs/{id}/retry; it redirects back
// to the job's page with the outcome.
func (h *handler) jobAction(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := jobID(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	action := lastSegment(r.URL.Path)
	can, err := h.can(ctx)
	if err != nil {
		h.actionError(w, r, action, err)
		return
	}
	if (action == "cancel" && !can.Cancel) || (action == "retry" && !can.Retry) {
		http.Error(w, "this dashboard may not "+action+" jobs (read-only, or the database role may not execute millrace."+action+")", http.StatusForbidden)
		return
	}
	var out string
	var retried int64
	if action == "cancel" {
		out, err = ops.Cancel(ctx, h.pool, id)
	} else {
		retried, out, err = ops.Retry(ctx, h.pool, id)
	}
	if err != nil {
		h.actionError(w, r, action+" job "+strconv.FormatInt(id, 10), err)
		return
	}
	h.log.Info("ui: "+action, "job", id, "result", out)
	if retried != 0 {
		id = retried // show the new job
	}
	seeOther(w, "../"+strconv.FormatInt(id, 10)+"?msg="+url.QueryEscape(action+": "+out))
}

// actionError answers an action that failed.
func (h *handler) actionError(w http.ResponseWriter, r *http.Request, what string, err error) {
	msg, setup := h.explain(r.Context(), err)
	if setup {
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	h.log.Error("ui: "+what, "error", msg)
	http.Error(w, msg, http.StatusInternalServerError)
}

// queueAction is POST queue/pause or queue/resume with the form field
// queue; it redirects to the queues page.
func (h *handler) queueAction(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	action := lastSegment(r.URL.Path)
	q := r.PostFormValue("queue")
	if q == "" {
		http.Error(w, "missing form field queue", http.StatusBadRequest)
		return
	}
	can, err := h.can(ctx)
	if err != nil {
		h.actionError(w, r, action, err)
		return
	}
	if (action == "pause" && !can.Pause) || (action == "resume" && !can.Resume) {
		http.Error(w, "this dashboard may not "+action+" queues (read-only, or the database role may not execute millrace."+action+")", http.StatusForbidden)
		return
	}
	if action == "pause" {
		err = ops.Pause(ctx, h.pool, q)
	} else {
		err = ops.Resume(ctx, h.pool, q)
	}
	if err != nil {
		h.actionError(w, r, action+" queue "+redact(q), err)
		return
	}
	h.log.Info("ui: "+action, "queue", redact(q))
	h.live.invalidate()
	past := map[string]string{"pause": "paused", "resume": "resumed"}[action]
	seeOther(w, "../?msg="+url.QueryEscape("queue "+redact(q)+" "+past))
}

// limitAction is POST queue/limit with the form fields queue, running (a
// number from 1 to 1000000; empty: none), rate (N/PERIOD; empty: none),
// per_key (1 to 1000000; empty: none), key_rate (N/PERIOD per key; empty:
// none) and key (its parts, comma-separated: kind or top-level args
// fields; empty: the kind): the queue's limits become those; it redirects
// to the queues page.
func (h *handler) limitAction(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.PostFormValue("queue")
	if q == "" {
		http.Error(w, "missing form field queue", http.StatusBadRequest)
		return
	}
	var l ops.Limit
	if v := strings.TrimSpace(r.PostFormValue("running")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000000 {
			http.Error(w, "running: want a whole number from 1 to 1000000, or nothing for no running limit", http.StatusBadRequest)
			return
		}
		l.Running = n
	}
	var err error
	if l.Rate, l.Per, err = ops.ParseRate(r.PostFormValue("rate")); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if v := strings.TrimSpace(r.PostFormValue("per_key")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000000 {
			http.Error(w, "per_key: want a whole number from 1 to 1000000, or nothing for no per-key limit", http.StatusBadRequest)
			return
		}
		l.PerKey = n
	}
	if l.KeyRate, l.KeyPer, err = ops.ParseRate(r.PostFormValue("key_rate")); err != nil {
		http.Error(w, "key_rate: "+err.Error(), http.StatusBadRequest)
		return
	}
	if k := strings.TrimSpace(r.PostFormValue("key")); k != "" && (l.PerKey > 0 || l.KeyRate > 0) {
		if l.Key, err = ops.ParseKey(k); err != nil {
			http.Error(w, "key: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	can, err := h.can(ctx)
	if err != nil {
		h.actionError(w, r, "limit", err)
		return
	}
	if !can.Limit {
		http.Error(w, "this dashboard may not set limits (read-only, or the database role is not an operator: millrace_admin)", http.StatusForbidden)
		return
	}
	if err := ops.SetLimit(ctx, h.pool, q, l); err != nil {
		h.actionError(w, r, "limit queue "+redact(q), err)
		return
	}
	h.log.Info("ui: limit", "queue", redact(q), "running", l.Running, "rate", l.Rate, "per", l.Per, "per_key", l.PerKey,
		"key_rate", l.KeyRate, "key_per", l.KeyPer)
	h.live.invalidate()
	var said []string
	if l.Running > 0 {
		said = append(said, fmt.Sprintf("at most %d running", l.Running))
	}
	if l.Rate > 0 {
		said = append(said, fmt.Sprintf("at most %d starting per %s", l.Rate, l.Per))
	}
	if l.PerKey > 0 {
		said = append(said, fmt.Sprintf("at most %d running per key", l.PerKey))
	}
	if l.KeyRate > 0 {
		said = append(said, fmt.Sprintf("at most %d starting per %s per key", l.KeyRate, l.KeyPer))
	}
	msg := "queue " + redact(q) + ": no limit"
	if len(said) > 0 {
		msg = "queue " + redact(q) + ": " + strings.Join(said, ", ")
	}
	seeOther(w, "../?msg="+url.QueryEscape(msg))
}

func (h *handler) horizonPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, "horizon", http.StatusOK, page{Title: "Horizon", Data: h.opts.PolicyName})
}

func (h *handler) apiHorizon(w http.ResponseWriter, r *http.Request) {
	v, err := h.horizon.get(r.Context())
	if err != nil {
		h.jsonError(w, r, http.StatusInternalServerError, err)
		return
	}
	v.PolicyName = h.opts.PolicyName
	writeJSON(w, v)
}

// stamp is a time as the dashboard shows every time: ISO 8601 date and
// time to the millisecond, in the dashboard's time zone.
func stamp(t time.Time) string { return t.Format("2006-01-02 15:04:05.000") }

func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return human(time.Since(t)) + " ago"
}

func human(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		return d.Truncate(time.Second).String()
	}
	return d.Truncate(time.Minute).String()
}

func prettyJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(b)
	}
	return string(out)
}
