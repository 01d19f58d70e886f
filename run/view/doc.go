// Package view is 'ac3 view': a small web server, local and read-only, for
// reading a run in a browser while it is being made. It opens the run file
// read-only (as status and report do), so it never takes the writer lock,
// and each page shows what was committed when it was asked for.
//
// Pages are rendered on the server with html/template; the stylesheet and
// the little script the pages use are embedded in the binary, so the view
// works offline and loads nothing from elsewhere.
//
// # URLs
//
// Other tools (the HTML report in particular) link into the view, so these
// are kept stable. Every parameter is optional; the filters of a list
// combine (all must hold). Turns are 1-based user turns.
//
//	/                                   the run: inputs, kept, dropped and
//	                                    quarantined counts, stages, spend
//	/conversations?FILTERS&after=SEQ    conversations in ingest order, a page
//	                                    at a time; after is the keyset
//	                                    cursor (the last seq shown)
//	/conversation/{id}                  one conversation with everything
//	                                    the run recorded about it
//	/conversation/{id}?turn=N           the same, at user turn N
//	/conversation/{id}?turn=N&strategies=a,b
//	                                    turn N's contexts of strategies a and b
//	                                    side by side (default: the first two
//	                                    curated)
//	/verdicts?pair=a:b&dim=D&winner=W   judge verdicts of one pair on one
//	                                    dimension (quality, on_topic), one row
//	                                    per turn; winner a, b or tie keeps
//	                                    those where that side won; pair may
//	                                    be a whole judge variant (a:b/user_only)
//	  &type=T                           only turns classified T
//	  &turn=N                           only user turn N
//	  &vs=c:b                           a McNemar cell: only turns where the
//	                                    other arm, judged against the same
//	                                    reference in pair c:b, did not win
//	/?turntypes=1                       the run page with turn-type shares
//	                                    even on a large run (they read every
//	                                    classify unit)
//	/quarantine?reason=R&after=ID       quarantined records
//
// The filters of /conversations:
//
//	source=PATH             read from this input file
//	lang=L                  language
//	turns=N, turns_min=N, turns_max=N
//	                        user-turn count
//	origin=O                source (ingested) or the step that derived it
//	type=T                  some user turn classified T (new_ask, feedback,
//	                        no_feedback); with done=STAGE&turn=N, turn N
//	pollution=C             some dataset reply polluted, in category C (any:
//	                        any category)
//	reply_pollution=C       some generated reply reviewed as polluted, in
//	                        category C (any: any category)
//	constraints=1|0         has / has no session constraint
//	pair=a:b                judged on pair a:b; with verdict=a|b|tie (and
//	                        dim, default quality) only where that side won
//	lic=TASK                a Lost-in-Conversation trajectory of TASK;
//	                        lic_result=pass|fail its baseline's grade
//	compint=retained|lost   a CompInt instance whose constraint was kept in
//	                        (or lost from) some strategy's context
//	                        (strategy=S: that strategy's)
//	done=STAGE              has done units of STAGE; narrowed by
//	                        strategy=S (the stage's variant S), turn=N (at
//	                        user turn N) and, for curate, gate=open|closed
//	failed=STAGE            has failed units of STAGE (any: of any stage);
//	                        variant=V narrows it to the stage's variant V
//	pending=STAGE           no unit of STAGE recorded yet (variant=V: of V)
//	q=TEXT                  TEXT occurs in a user turn (case-insensitive)
//
// # Paging
//
// A list never counts or skips rows: each page starts after the last seq of
// the one before and reads forward through the primary key. One request
// reads at most a time budget's worth of the run (see budget); when a rare
// filter has not filled the page by then, the page says how far it looked
// and links to the rest, so the first page of a run of millions comes back
// in the same time as that of a small one and memory does not grow with
// the run.
package view
