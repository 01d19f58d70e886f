package analyze

import (
	"reflect"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

// The data each prompt is rendered with. T is the answer's form (the
// contract): shipped prompts lay it out themselves; a user's template never
// sees it, and ac3 appends the form (see contract).

// specData is what step 1 is rendered with. Its only constructor takes a
// conv.UserView, and it has no field that could hold anything else, so no
// prompt for step 1, shipped or a user's, can be given assistant text.
type specData struct {
	System string   // the system message, "" when there is none
	Users  []string // u_1..u_t, oldest first
	T      parse.Answer
}

func newSpecData(u conv.UserView, ans parse.Answer) specData {
	return specData{System: u.System(), Users: u.Users(), T: ans}
}

// transcriptData is what the ablations that read the whole conversation
// are rendered with.
type transcriptData struct {
	Transcript string
	T          parse.Answer
}

type evaluateData struct {
	Spec, Transcript, Cheatsheet string
	T                            parse.Answer
}

type rewriteData struct {
	Transcript, Spec, Aligned, Issues string
	T                                 parse.Answer
}

type summaryData struct {
	User, Reply string
	T           parse.Answer
}

type reflectData struct {
	Steps      []Step
	Outcome    string
	Cheatsheet string
	T          parse.Answer
}

type unifyData struct {
	Cheatsheet, Takeaways string
	MaxWords              int
	T                     parse.Answer
}

// assistantText is why a template for step 1 cannot have a field that would
// hold assistant turns; the names it is quoted for are those such a field
// has in the other prompts, or would plausibly be given.
const assistantText = "AC3's first step reads only the system message and the user's messages. Assistant turns are left out of its data by type, not by instruction, because an extractor that reads them takes their mistakes on; its template has .System and .Users"

// PromptSpecs declares the analyzer's prompts for users' templates that
// replace them (Options.Prompts; stages.curate.prompts in the config), by
// name:
//
//   - spec (AC3 step 1): .System and .Users only, and it must show .Users;
//     asking for the conversation or an assistant turn is refused
//     (structural exclusion);
//   - evaluate (step 2): .Spec, .Transcript, .Cheatsheet; must show .Spec
//     and .Transcript;
//   - rewrite and rewrite_paper (the rewrite operator's call): .Transcript,
//     .Spec, .Aligned, .Issues; must show .Spec and .Transcript;
//   - summary (the sum strategy): .User, .Reply; must show .Reply;
//   - reflect (memory): .Steps, .Outcome, .Cheatsheet; must show .Steps;
//   - unify (memory): .Cheatsheet, .Takeaways, .MaxWords; must show
//     .Cheatsheet and .Takeaways, or the notes learned so far would be lost;
//   - spec_contagious and single_pass (ablations): .Transcript.
//
// In every one the answer's form (.T) is ac3's.
func PromptSpecs() []prompt.Spec {
	contract := []string{"T"}
	withheld := map[string]string{}
	for _, n := range []string{"Transcript", "Messages", "History", "Conversation", "Context", "Assistant", "Assistants", "Replies", "Reply", "PrevAssistant", "Aligned", "Issues", "Turns", "Steps"} {
		withheld[n] = assistantText
	}
	spec := func(name string, data reflect.Type, needs ...string) prompt.Spec {
		return prompt.Spec{Name: name, Data: data, Needs: needs, Contract: contract}
	}
	step1 := spec("spec", reflect.TypeFor[specData](), "Users")
	step1.Withheld = withheld
	return []prompt.Spec{
		step1,
		spec("evaluate", reflect.TypeFor[evaluateData](), "Spec", "Transcript"),
		spec("rewrite", reflect.TypeFor[rewriteData](), "Spec", "Transcript"),
		spec("rewrite_paper", reflect.TypeFor[rewriteData](), "Spec", "Transcript"),
		spec("rewrite_earlier", reflect.TypeFor[rewriteData](), "Spec", "Transcript"),
		spec("summary", reflect.TypeFor[summaryData](), "Reply"),
		{Name: "summary_paper", Data: reflect.TypeFor[summaryData](), Needs: []string{"Reply"}},
		spec("reflect", reflect.TypeFor[reflectData](), "Steps"),
		spec("unify", reflect.TypeFor[unifyData](), "Cheatsheet", "Takeaways"),
		spec("spec_contagious", reflect.TypeFor[transcriptData](), "Transcript"),
		spec("single_pass", reflect.TypeFor[transcriptData](), "Transcript"),
	}
}

// contract states the answer's form at the end of a user's template: each
// section between its tags (carrying the request's nonce), or the one JSON
// object the request's schema enforces.
func contract(ans parse.Answer) string {
	if ans.JSON() {
		return "Answer with one JSON object of this shape:\n" + ans.Layout()
	}
	return "Answer with each section between these exact tags:\n" + ans.Layout()
}
