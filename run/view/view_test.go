package view

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/classify"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// reader opens the test run read-only, as 'ac3 view' does.
func reader(t *testing.T) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(testCtx(t), fixtureRun, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func server(t *testing.T, l *ledger.Ledger) (*Handler, *httptest.Server) {
	t.Helper()
	h, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func get(t *testing.T, srv *httptest.Server, path string, want int) string {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d\n%s", path, resp.StatusCode, want, b)
	}
	return string(b)
}

func contains(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

var convLinkRe = regexp.MustCompile(`<a class="conv" href="/conversation/([^"?#]+)"`)
var nextRe = regexp.MustCompile(`id="next" href="([^"]+)"`)

// listed is the conversation ids a list page shows, and its next link.
func listed(t *testing.T, body string) ([]string, string) {
	t.Helper()
	var ids []string
	for _, m := range convLinkRe.FindAllStringSubmatch(body, -1) {
		id, err := url.PathUnescape(m[1])
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	next := ""
	if m := nextRe.FindStringSubmatch(body); m != nil {
		next = strings.ReplaceAll(m[1], "&amp;", "&")
	}
	return ids, next
}

func TestRunPageLinksEveryNumber(t *testing.T) {
	l := reader(t)
	_, srv := server(t, l)
	body := get(t, srv, "/", http.StatusOK)
	st, err := l.Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "the run page", body,
		`<a id="kept" href="/conversations">`+strconv.FormatInt(st.Conversations, 10)+`</a>`,
		`<a id="quarantined" href="/quarantine">`+strconv.FormatInt(st.QuarantTotal, 10)+`</a>`,
		`href="/conversations?done=curate"`, `href="/conversations?failed=respond"`,
		`href="/conversations?type=feedback"`, `href="/conversations?lang=English"`,
		"wildchat_mixed.jsonl", "classify", "curate", "judge", "respond")
	if st.QuarantTotal == 0 {
		t.Fatal("the test run quarantined nothing")
	}
	// Each input's link lists the conversations read from it.
	m := regexp.MustCompile(`href="(/conversations\?source=[^"]*wildchat-1m-sample10.jsonl)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no link to the WildChat input's conversations")
	}
	ids, _ := listed(t, get(t, srv, m[1], http.StatusOK))
	if len(ids) == 0 || slices.Contains(ids, "markup-1") {
		t.Errorf("the WildChat input lists %v", ids)
	}
	for reason := range st.Quarantined {
		contains(t, "the run page", body, `href="/quarantine?reason=`+url.QueryEscape(reason)+`"`)
	}
}

// match answers, from the ledger's own readers, whether a conversation
// meets the filters the test applies, so the view's SQL is checked against
// an independent reading.
func typesOf(t *testing.T, l *ledger.Ledger, id string) map[string]bool {
	t.Helper()
	us, err := l.ConversationUnits(testCtx(t), classify.StageName, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, u := range us {
		if u.Status == ledger.Done {
			lb, err := classify.Decode(u.Output)
			if err != nil {
				t.Fatal(err)
			}
			out[lb.Type] = true
		}
	}
	return out
}

func TestFiltersCombineAndPageByKeyset(t *testing.T) {
	l := reader(t)
	h, srv := server(t, l)
	ctx := testCtx(t)
	// The expected list, read conversation by conversation.
	var want []string
	var all []ledger.Stored
	for after := int64(0); ; {
		page, err := l.ConversationPage(ctx, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	for _, s := range all {
		if s.Conv.UserTurns() >= 3 && typesOf(t, l, s.Conv.ID)["feedback"] {
			want = append(want, s.Conv.ID)
		}
	}
	if len(want) < 4 {
		t.Fatalf("only %d conversations with feedback and 3+ turns: the test needs a few", len(want))
	}
	// Small pages, so the list takes several.
	h.pageSize = 3
	var got []string
	path := "/conversations?type=feedback&turns_min=3"
	pages := 0
	for path != "" {
		if strings.Contains(path, "offset") {
			t.Fatalf("a page link counts rows: %s", path)
		}
		body := get(t, srv, path, http.StatusOK)
		ids, next := listed(t, body)
		if len(ids) > h.pageSize {
			t.Fatalf("%s shows %d rows, page size %d", path, len(ids), h.pageSize)
		}
		if pages == 0 {
			contains(t, "the first page", body, "type: feedback", "turns_min: 3")
		}
		got = append(got, ids...)
		path = next
		if pages++; pages > 100 {
			t.Fatal("the pages do not end")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("filtered and paged:\n got %v\nwant %v", got, want)
	}
	if pages < 2 {
		t.Errorf("%d page(s) for %d rows of 3", pages, len(got))
	}
	// With a turn, the type is that turn's: turn 3 a new ask and curated
	// there, read conversation by conversation.
	h.pageSize = 1000
	var want2 []string
	for _, s := range all {
		us, err := l.ConversationUnits(ctx, classify.StageName, s.Conv.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			if lb, err := classify.Decode(u.Output); u.Status == ledger.Done && err == nil && u.Turn == 3 && lb.Type == "new_ask" {
				want2 = append(want2, s.Conv.ID)
				break
			}
		}
	}
	got2, _ := listed(t, get(t, srv, "/conversations?type=new_ask&done=curate&strategy=fc&turn=3", http.StatusOK))
	if len(want2) == 0 || !slices.Equal(got2, want2) {
		t.Errorf("turn 3 a new ask, curated there:\n got %v\nwant %v", got2, want2)
	}
	if anyTurn, _ := listed(t, get(t, srv, "/conversations?type=new_ask&turns_min=3", http.StatusOK)); len(anyTurn) <= len(want2) {
		t.Errorf("a new ask at any turn lists %d, at turn 3 %d: the test does not tell them apart", len(anyTurn), len(want2))
	}
	// The language filter narrows the same list further.
	ids, _ := listed(t, get(t, srv, "/conversations?type=feedback&turns_min=3&lang=nosuchlanguage", http.StatusOK))
	if len(ids) != 0 {
		t.Errorf("a language no conversation has lists %v", ids)
	}
}

func TestJudgeAndStageFilters(t *testing.T) {
	l := reader(t)
	h, srv := server(t, l)
	h.pageSize = 1000
	ids, _ := listed(t, get(t, srv, "/conversations?pair=fc:ao", http.StatusOK))
	if len(ids) != judged {
		t.Errorf("pair fc:ao lists %d conversations, want %d", len(ids), judged)
	}
	// fc wins the even turns: every judged conversation has one (turn 2).
	a, _ := listed(t, get(t, srv, "/conversations?pair=fc:ao&verdict=a&dim=quality", http.StatusOK))
	if len(a) == 0 || len(a) > judged {
		t.Errorf("fc wins in %d conversations", len(a))
	}
	// On on_topic every verdict is a tie.
	none, _ := listed(t, get(t, srv, "/conversations?pair=fc:ao&verdict=a&dim=on_topic", http.StatusOK))
	if len(none) != 0 {
		t.Errorf("fc wins on_topic in %v", none)
	}
	failed, _ := listed(t, get(t, srv, "/conversations?failed=respond", http.StatusOK))
	anyFailed, _ := listed(t, get(t, srv, "/conversations?failed=any", http.StatusOK))
	if len(failed) != 1 || !slices.Equal(failed, anyFailed) {
		t.Errorf("failed=respond lists %v, failed=any %v; want the one conversation", failed, anyFailed)
	}
	// The review of generated replies is its own filter: fc's reply in one
	// conversation, not the dataset's.
	replyPol, _ := listed(t, get(t, srv, "/conversations?reply_pollution=code_carryover", http.StatusOK))
	replyAny, _ := listed(t, get(t, srv, "/conversations?reply_pollution=any", http.StatusOK))
	if datasetPol, _ := listed(t, get(t, srv, "/conversations?pollution=code_carryover", http.StatusOK)); len(replyPol) != 1 || !slices.Equal(replyPol, replyAny) || len(datasetPol) != 0 {
		t.Errorf("reply_pollution=code_carryover lists %v, any %v, dataset pollution=code_carryover %v", replyPol, replyAny, datasetPol)
	}
	pol, _ := listed(t, get(t, srv, "/conversations?pollution=intent_override", http.StatusOK))
	if len(pol) != 1 {
		t.Errorf("pollution=intent_override lists %v", pol)
	}
	lic, _ := listed(t, get(t, srv, "/conversations?lic=math&lic_result=fail", http.StatusOK))
	if len(lic) != 1 {
		t.Errorf("lic=math&lic_result=fail lists %v", lic)
	}
	// The report's links narrow these by variant: the failed respond unit
	// is ao's, and CompInt measured ao only.
	if ao, _ := listed(t, get(t, srv, "/conversations?failed=respond&variant=ao", http.StatusOK)); !slices.Equal(ao, failed) {
		t.Errorf("failed=respond&variant=ao lists %v, want %v", ao, failed)
	}
	if fc, _ := listed(t, get(t, srv, "/conversations?failed=respond&variant=fc", http.StatusOK)); len(fc) != 0 {
		t.Errorf("failed=respond&variant=fc lists %v, want none", fc)
	}
	get(t, srv, "/conversations?failed=respond&variant=nope", http.StatusBadRequest)
	// Pending in respond/fc: the conversations with no fc answer yet, none
	// of those that have one.
	doneFC, _ := listed(t, get(t, srv, "/conversations?done=respond&strategy=fc", http.StatusOK))
	pendingFC, _ := listed(t, get(t, srv, "/conversations?pending=respond&variant=fc", http.StatusOK))
	if len(doneFC) == 0 || len(pendingFC) == 0 {
		t.Errorf("respond/fc: %d done, %d pending; the fixture has both", len(doneFC), len(pendingFC))
	}
	for _, c := range pendingFC {
		if slices.Contains(doneFC, c) {
			t.Errorf("%s is listed as done and as pending in respond/fc", c)
		}
	}
	get(t, srv, "/conversations?pending=respond&variant=nope", http.StatusBadRequest)
	lostAO, _ := listed(t, get(t, srv, "/conversations?compint=lost&strategy=ao", http.StatusOK))
	get(t, srv, "/conversations?compint=lost&strategy=fc", http.StatusBadRequest)
	lost, _ := listed(t, get(t, srv, "/conversations?compint=lost", http.StatusOK))
	if !slices.Equal(lostAO, lost) {
		t.Errorf("compint=lost&strategy=ao lists %v, compint=lost %v", lostAO, lost)
	}
	kept, _ := listed(t, get(t, srv, "/conversations?compint=retained", http.StatusOK))
	if len(lost) != 1 || len(kept) != 0 {
		t.Errorf("compint lost %v, retained %v", lost, kept)
	} else {
		contains(t, "a CompInt result", get(t, srv, "/conversation/"+url.PathEscape(lost[0]), http.StatusOK), `id="compint"`, "SC 7 (format)", "<b class=\"bad\">lost</b>", "compliant_first: A <span class=\"ok\">complied", "compliant_second: A <span class=\"bad\">did not comply")
	}
	withC, _ := listed(t, get(t, srv, "/conversations?constraints=1", http.StatusOK))
	withoutC, _ := listed(t, get(t, srv, "/conversations?constraints=0", http.StatusOK))
	everyone, _ := listed(t, get(t, srv, "/conversations", http.StatusOK))
	if len(withC)+len(withoutC) != len(everyone) || len(withC) == 0 {
		t.Errorf("constraints: %d with, %d without, %d in all", len(withC), len(withoutC), len(everyone))
	}
	found, _ := listed(t, get(t, srv, "/conversations?q="+strings.ToUpper(needle), http.StatusOK))
	if len(found) != 1 || found[0] != "markup-1" {
		t.Errorf("text search lists %v, want markup-1", found)
	}
	// done=STAGE narrowed to one strategy and one turn, as the report
	// links it.
	lt3, _ := listed(t, get(t, srv, "/conversations?done=curate&strategy=lt&turn=3", http.StatusOK))
	lt2, _ := listed(t, get(t, srv, "/conversations?done=curate&strategy=lt&turn=2", http.StatusOK))
	if len(lt3) == 0 || len(lt3) >= len(lt2) {
		t.Errorf("curated with lt at turn 3: %d conversations, at turn 2: %d", len(lt3), len(lt2))
	}
	closed, _ := listed(t, get(t, srv, "/conversations?done=curate&strategy=fc&gate=closed", http.StatusOK))
	open, _ := listed(t, get(t, srv, "/conversations?done=curate&strategy=fc&gate=open", http.StatusOK))
	if len(closed) != len(lt2) || len(open) != 0 {
		t.Errorf("fc has no gate: %d closed, %d open", len(closed), len(open))
	}
	// The filter form keeps what it has no field for.
	contains(t, "the filter form", get(t, srv, "/conversations?done=curate&strategy=lt", http.StatusOK), `<input type="hidden" name="done" value="curate">`, `<input type="hidden" name="strategy" value="lt">`)
	contains(t, "an unknown strategy", get(t, srv, "/conversations?done=curate&strategy=nosuch", http.StatusBadRequest), "nosuch")
	// Nonsense is refused with a reason, not a 500.
	contains(t, "a bad filter", get(t, srv, "/conversations?turns_min=many", http.StatusBadRequest), "turns_min")
	contains(t, "a bad filter", get(t, srv, "/conversations?verdict=a", http.StatusBadRequest), "pair")
	contains(t, "a bad cursor", get(t, srv, "/conversations?after=-3", http.StatusBadRequest), "after")
}

func TestConversationPageShowsEverything(t *testing.T) {
	l := reader(t)
	_, srv := server(t, l)
	ctx := testCtx(t)
	first, err := l.ConversationPage(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	id := first[0].Conv.ID
	body := get(t, srv, "/conversation/"+url.PathEscape(id)+"?turn=2", http.StatusOK)
	contains(t, "a judged conversation", body,
		`id="turn-1"`, `id="turn-2"`, `class="turn focus" id="turn-2"`,
		"polluted: intent_override", "source of pollution at turn 2",
		`data-strategy="fc"`, `data-strategy="ao"`, "tokens",
		"[fc] answer to turn 2", "[ao] answer to turn 2",
		"turn 2: the winner kept the user&#39;s request in view", "turn 2, other order: same winner",
		"call 1: fc shown first", "call 2: ao shown first")
	if strings.Contains(body, `<div class="ctx" data-strategy="lt"`) {
		t.Error("lt's context is shown though only the first two strategies are by default")
	}
	// Switching strategies: lt and ao, in that order.
	body = get(t, srv, "/conversation/"+url.PathEscape(id)+"?turn=2&strategies=lt,ao", http.StatusOK)
	lt, ao := strings.Index(body, `<div class="ctx" data-strategy="lt"`), strings.Index(body, `<div class="ctx" data-strategy="ao"`)
	if lt < 0 || ao < 0 || lt > ao || strings.Contains(body, `<div class="ctx" data-strategy="fc"`) {
		t.Errorf("strategies=lt,ao: lt at %d, ao at %d, fc shown %v", lt, ao, strings.Contains(body, `<div class="ctx" data-strategy="fc"`))
	}
	// Markup in a conversation is text, never markup.
	body = get(t, srv, "/conversation/markup-1", http.StatusOK)
	if strings.Contains(body, markup) || !strings.Contains(body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Error("the conversation's markup is not escaped")
	}
	// A feedback turn's reference links to the turn it refers to.
	fb, _ := listed(t, get(t, srv, "/conversations?type=feedback", http.StatusOK))
	if len(fb) == 0 {
		t.Fatal("no feedback turn in the test run")
	}
	if !regexp.MustCompile(`refers to <a href="#turn-\d+">1a</a>`).MatchString(get(t, srv, "/conversation/"+url.PathEscape(fb[0]), http.StatusOK)) {
		t.Error("a feedback turn's reference is not a link to the earlier turn")
	}
	contains(t, "a missing conversation", get(t, srv, "/conversation/no-such-id", http.StatusNotFound), "no-such-id")
	// The LiC trajectory and its grade.
	ids, _ := listed(t, get(t, srv, "/conversations?lic=math", http.StatusOK))
	if len(ids) != 1 {
		t.Fatalf("lic=math lists %v", ids)
	}
	contains(t, "a LiC conversation", get(t, srv, "/conversation/"+url.PathEscape(ids[0]), http.StatusOK),
		"Lost in Conversation", "2 shards", "final answer</div><pre>The answer is 41.</pre>", "graded <b>fail</b>", "the final number differs")
}

func TestVerdictsPage(t *testing.T) {
	l := reader(t)
	_, srv := server(t, l)
	body := get(t, srv, "/verdicts?pair=fc:ao&dim=quality&winner=b", http.StatusOK)
	rows := strings.Count(body, `<td class="win">ao`)
	if rows == 0 || strings.Contains(body, `<td class="win">fc`) {
		t.Errorf("winner=b shows %d rows won by ao, and fc's: %v", rows, strings.Contains(body, `<td class="win">fc`))
	}
	contains(t, "the verdicts", body, "the winner kept the user", "?turn=")
	contains(t, "an unknown pair", get(t, srv, "/verdicts?pair=x:y", http.StatusNotFound), "x:y")
	// The report's narrower links: one round, one turn type, a McNemar cell.
	body = get(t, srv, "/verdicts?pair=fc:ao&dim=quality&turn=2", http.StatusOK)
	if n := strings.Count(body, "?turn=2#turn-2"); n != judged {
		t.Errorf("turn=2 shows %d verdicts, want one per judged conversation (%d)", n, judged)
	}
	if strings.Contains(body, "?turn=3#") {
		t.Error("turn=2 shows turn 3")
	}
	all := strings.Count(get(t, srv, "/verdicts?pair=fc:ao&dim=quality", http.StatusOK), `<td class="win">`)
	byType := 0
	for _, typ := range []string{"new_ask", "feedback", "no_feedback", "unknown"} {
		byType += strings.Count(get(t, srv, "/verdicts?pair=fc:ao&dim=quality&type="+typ, http.StatusOK), `<td class="win">`)
	}
	if byType == 0 || byType > all {
		t.Errorf("%d verdicts by turn type, %d in all", byType, all)
	}
	// Against itself, the other arm is the same strategy: it always won
	// where this one did, so the cell is empty.
	body = get(t, srv, "/verdicts?pair=fc:ao&dim=quality&winner=a&vs=fc:ao", http.StatusOK)
	if strings.Contains(body, `<td class="win">`) {
		t.Error("a McNemar cell of a pair against itself is not empty")
	}
	contains(t, "an unknown vs", get(t, srv, "/verdicts?pair=fc:ao&vs=x:y", http.StatusBadRequest), "x:y")
}

func TestQuarantinePage(t *testing.T) {
	l := reader(t)
	_, srv := server(t, l)
	body := get(t, srv, "/quarantine", http.StatusOK)
	contains(t, "the quarantine", body, "wildchat_mixed.jsonl", `<td class="n">2</td>`, "&#34;conversation_hash&#34;: &#34;bad-1&#34;")
	var q []ledger.Quarantined
	if err := l.Quarantine(testCtx(t), func(r ledger.Quarantined) error { q = append(q, r); return nil }); err != nil {
		t.Fatal(err)
	}
	body = get(t, srv, "/quarantine?reason="+url.QueryEscape(string(q[0].Reason)), http.StatusOK)
	contains(t, "one reason", body, string(q[0].Reason))
}

func TestAssetsAreEmbedded(t *testing.T) {
	_, srv := server(t, reader(t))
	for _, p := range []string{"/static/view.css", "/static/view.js"} {
		if b := get(t, srv, p, http.StatusOK); len(b) < 100 {
			t.Errorf("%s is %d bytes", p, len(b))
		}
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

func TestLoopbackByDefault(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		expose bool
		ok     bool
	}{
		{"127.0.0.1:8080", false, true}, {"localhost:0", false, true}, {"[::1]:8080", false, true},
		{"0.0.0.0:8080", false, false}, {":8080", false, false}, {"192.168.1.5:80", false, false},
		{"0.0.0.0:8080", true, true}, {":8080", true, true}, {"nonsense", true, false},
	} {
		if err := CheckAddr(tc.addr, tc.expose); (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, %v) = %v", tc.addr, tc.expose, err)
		} else if err != nil && !tc.expose && !strings.Contains(err.Error(), "--expose") && tc.addr != "nonsense" {
			t.Errorf("the refusal does not name --expose: %v", err)
		}
	}
	if !strings.HasPrefix(DefaultAddr, "127.0.0.1:") {
		t.Errorf("DefaultAddr %q", DefaultAddr)
	}
	l := reader(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	got := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, Options{Addr: "127.0.0.1:0", Ready: func(u string) { got <- u }}) }()
	var base string
	select {
	case base = <-got:
	case err := <-done:
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("listening at %s", base)
	}
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
	if err := Serve(testCtx(t), l, Options{Addr: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "--expose") {
		t.Errorf("Serve on 0.0.0.0 without Expose: %v", err)
	}
}
