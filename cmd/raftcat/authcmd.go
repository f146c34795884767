package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"
)

const authUsage = `Usage:
  raftcat auth principal create [--service] [--addr URL] [--token T] NAME   create a user (or, with --service, a service principal with OAuth2 client credentials)
  raftcat auth principal list [--addr URL] [--token T]                    list the principals
  raftcat auth principal delete [--addr URL] [--token T] NAME             delete a principal, its tokens and its grants
  raftcat auth token create [--ttl D] [--addr URL] [--token T] [NAME]     create an API token for NAME (default: yourself); it is shown once
  raftcat auth token revoke [--addr URL] [--token T] ID                   revoke a token at once, on every node
  raftcat auth whoami [--addr URL] [--token T]                            who the token authenticates as

Creating and deleting principals needs the metastore admin's token; anyone
may create tokens for themselves. The token comes from --token or RAFTCAT_TOKEN.
`

func authCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) >= 1 && isHelpFlag(args[0]) {
		fmt.Fprint(stdout, authUsage)
		return 0
	}
	sub, all := "", args
	switch {
	case len(args) >= 1 && args[0] == "whoami":
		sub, args = args[0], args[1:]
	case len(args) >= 2:
		sub, args = args[0]+" "+args[1], args[2:]
	case len(args) == 1:
		sub, args = args[0], nil
	}
	run, ok := authCommands[sub]
	if !ok {
		if helpAsked(all) {
			fmt.Fprint(stdout, authUsage)
			return 0
		}
		return unknownCommand(stderr, "raftcat auth", sub)
	}
	return run(args, stdout, stderr)
}

var authCommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"principal create": principalCreate,
	"principal list":   principalList,
	"principal delete": principalDelete,
	"token create":     tokenCreate,
	"token revoke":     tokenRevoke,
	"whoami":           whoami,
}

// authCall sends a request to /v1/auth and decodes the JSON answer into out.
func authCall(addr, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, addr+"/v1/auth"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiError(resp)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "raftcat auth %s: %v\n", name, err)
	return 1
}

func principalCreate(args []string, stdout, stderr io.Writer) int {
	service := false
	addr, pos, code, ok := adminFlagsWith("auth principal create", "auth principal create [--addr URL] [--token T] [--service] NAME", args, stdout, stderr, 1,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&service, "service", false, "a service principal, with OAuth2 client credentials (shown once)")
		})
	if !ok {
		return code
	}
	typ := "user"
	if service {
		typ = "service"
	}
	var p map[string]any
	if err := authCall(addr, http.MethodPost, "/principals", map[string]string{"name": pos[0], "type": typ}, &p); err != nil {
		return fail(stderr, "principal create", err)
	}
	fmt.Fprintf(stdout, "created %s principal %s\n", typ, pos[0])
	if service {
		fmt.Fprintf(stdout, "client_id:     %v\nclient_secret: %v\n(the secret is shown once; OAuth2 clients such as Iceberg's use credential=<client_id>:<client_secret>)\n",
			p["client_id"], p["client_secret"])
	}
	return 0
}

func principalList(args []string, stdout, stderr io.Writer) int {
	addr, _, code, ok := adminFlags("auth principal list", "auth principal list [--addr URL] [--token T]", args, stdout, stderr, 0)
	if !ok {
		return code
	}
	var out struct {
		Principals []struct {
			Name      string `json:"name"`
			Type      string `json:"type"`
			ClientID  string `json:"client_id"`
			Admin     bool   `json:"admin"`
			CreatedAt int64  `json:"created_at"`
		} `json:"principals"`
	}
	if err := authCall(addr, http.MethodGet, "/principals", nil, &out); err != nil {
		return fail(stderr, "principal list", err)
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tTYPE\tADMIN\tCLIENT ID\tCREATED")
	for _, p := range out.Principals {
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", p.Name, p.Type, p.Admin, p.ClientID, time.UnixMilli(p.CreatedAt).UTC().Format(time.RFC3339))
	}
	w.Flush()
	return 0
}

func principalDelete(args []string, stdout, stderr io.Writer) int {
	addr, pos, code, ok := adminFlags("auth principal delete", "auth principal delete [--addr URL] [--token T] NAME", args, stdout, stderr, 1)
	if !ok {
		return code
	}
	var p map[string]any
	if err := authCall(addr, http.MethodDelete, "/principals/"+url.PathEscape(pos[0]), nil, &p); err != nil {
		return fail(stderr, "principal delete", err)
	}
	fmt.Fprintf(stdout, "deleted principal %s, its tokens and its grants\n", pos[0])
	return 0
}

func tokenCreate(args []string, stdout, stderr io.Writer) int {
	ttl := time.Duration(-1)
	addr, pos, code, ok := adminFlagsWith("auth token create", "auth token create [--ttl D] [--addr URL] [--token T] [NAME]", args, stdout, stderr, -1,
		func(fs *flag.FlagSet) {
			fs.DurationVar(&ttl, "ttl", -1, "how long the token lives, e.g. 720h; 0: it never expires (default: 90 days)")
		})
	if !ok {
		return code
	}
	body := map[string]any{}
	if len(pos) == 1 {
		body["principal"] = pos[0]
	}
	if ttl >= 0 {
		body["ttl_seconds"] = int64(ttl / time.Second)
	}
	var t struct {
		ID        string `json:"id"`
		Token     string `json:"token"`
		Principal string `json:"principal"`
		ExpiresAt *int64 `json:"expires_at"`
	}
	if err := authCall(addr, http.MethodPost, "/tokens", body, &t); err != nil {
		return fail(stderr, "token create", err)
	}
	exp := "never"
	if t.ExpiresAt != nil {
		exp = time.UnixMilli(*t.ExpiresAt).UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(stdout, "%s\n", t.Token)
	fmt.Fprintf(stderr, "token %s for %s, expires %s (shown once; revoke with: raftcat auth token revoke %s)\n", t.ID, t.Principal, exp, t.ID)
	return 0
}

func tokenRevoke(args []string, stdout, stderr io.Writer) int {
	addr, pos, code, ok := adminFlags("auth token revoke", "auth token revoke [--addr URL] [--token T] ID", args, stdout, stderr, 1)
	if !ok {
		return code
	}
	var t map[string]any
	if err := authCall(addr, http.MethodDelete, "/tokens/"+url.PathEscape(pos[0]), nil, &t); err != nil {
		return fail(stderr, "token revoke", err)
	}
	fmt.Fprintf(stdout, "revoked token %s of %v\n", pos[0], t["principal"])
	return 0
}

func whoami(args []string, stdout, stderr io.Writer) int {
	addr, _, code, ok := adminFlags("auth whoami", "auth whoami [--addr URL] [--token T]", args, stdout, stderr, 0)
	if !ok {
		return code
	}
	var w map[string]any
	if err := authCall(addr, http.MethodGet, "/whoami", nil, &w); err != nil {
		return fail(stderr, "whoami", err)
	}
	if w["anonymous"] == true {
		fmt.Fprintln(stdout, "anonymous")
		return 0
	}
	fmt.Fprintf(stdout, "%v (%v%s)\n", w["principal"], w["kind"], map[bool]string{true: ", metastore admin"}[w["admin"] == true])
	return 0
}
