package simulate

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/lic/grade"
)

// Prompts replace the simulation's prompts with users' templates, each
// parsed and checked with prompt.ParseFile against its PromptSpecs entry;
// a nil field keeps ours. Their versions go into the simulation's (and so
// the replay's) and the check's variant versions.
type Prompts struct {
	// UserSim writes the simulated user's next message from .History (the
	// conversation so far) and .Piece (the shard to convey now).
	UserSim *prompt.Template
	// Respondent is the assistant's system prompt, rendered from .Task,
	// .Schema and .Functions (empty for tasks without them); ac3 appends
	// the task's answer format, which the grader reads.
	Respondent *prompt.Template
	// FNCheck asks whether the user's messages carry the task, from .Task
	// (the original, fully specified task) and .Messages (the simulated
	// user's messages); ac3 appends the JSON form of the verdict.
	FNCheck *prompt.Template
}

type (
	userSimData struct {
		History []conv.Message
		Piece   string
	}
	respondentData struct {
		Task, Schema, Functions string
	}
	fnData struct {
		Task     string
		System   string // the system message of the trace (schema, functions)
		Answer   string // the reference answer (Reference); "" for code
		Messages []string
	}
)

// PromptSpecs declares the simulation's prompts for users' templates
// (Prompts; lic.prompts user_sim, respondent and fn_check in the config).
// respondent renders to one message, sent as the system message, and must
// show .Schema and .Functions, without which the database and actions
// tasks cannot be solved.
func PromptSpecs() []prompt.Spec {
	return []prompt.Spec{
		{Name: "user_sim", Data: reflect.TypeFor[userSimData](), Needs: []string{"Piece"}},
		{Name: "respondent", Data: reflect.TypeFor[respondentData](), Needs: []string{"Schema", "Functions"}, UserOnly: true},
		{Name: "fn_check", Data: reflect.TypeFor[fnData](), Needs: []string{"Task", "Messages"}},
	}
}

// The answers' forms ac3 appends to users' templates: the simulated
// user's message is sent as it is, and the check's verdict is read as
// this JSON object.
const (
	userSimContract = "Reply with the message only: it is sent to the assistant as it is."
	fnContract      = `Answer with a JSON object: {"sufficient": true or false, "reason": "one sentence"}.`
)

// check refuses a template given for the wrong prompt.
func (p Prompts) check() error {
	for _, s := range []struct {
		t    *prompt.Template
		name string
	}{{p.UserSim, "user_sim"}, {p.Respondent, "respondent"}, {p.FNCheck, "fn_check"}} {
		if s.t != nil && s.t.Name() != s.name {
			return fmt.Errorf("the %s prompt was given a template for %s", s.name, s.t.Name())
		}
	}
	return nil
}

// version is what users' templates add to the prompts' version.
func (p Prompts) version() string {
	var v string
	for _, t := range []*prompt.Template{p.UserSim, p.Respondent} {
		if t != nil {
			v += "+" + t.Version()
		}
	}
	return v
}

// system is the respondent's system prompt of in: ours (Prompt), or the
// user's with the task's answer format after it.
func (p Prompts) system(in *grade.Instance) (string, error) {
	if p.Respondent == nil {
		return Prompt(in), nil
	}
	contract := taskContracts[in.Task]
	msgs, err := p.Respondent.RenderAnswer(respondentData{Task: in.Task, Schema: strings.TrimSpace(in.SchemaSQL), Functions: string(in.Function)}, contract)
	if err != nil {
		return "", err
	}
	return msgs[len(msgs)-1].Content, nil
}

// userSim is the user simulator's request: ours (userSimRequest), or the
// user's template.
func (p Prompts) userSim(history []conv.Message, next string) ([]conv.Message, error) {
	if p.UserSim == nil {
		return userSimRequest(history, next), nil
	}
	return p.UserSim.RenderAnswer(userSimData{History: history, Piece: next}, userSimContract)
}

// fnMessages is the check's request for in's trace: ours, or the user's
// template.
func (p Prompts) fnMessages(in *grade.Instance, trace *Trajectory) ([]conv.Message, error) {
	if p.FNCheck == nil {
		return []conv.Message{{Role: conv.System, Content: fnPrompt}, {Role: conv.User, Content: fnInput(in, trace)}}, nil
	}
	var users []string
	for _, m := range trace.Messages {
		if m.Role == conv.User {
			users = append(users, m.Content)
		}
	}
	return p.FNCheck.RenderAnswer(fnData{Task: Original(in, trace.Shards), System: trace.System, Answer: Reference(in), Messages: users}, fnContract)
}

// fnVersion is the check's prompt in its variant version.
func (p Prompts) fnVersion() string {
	if p.FNCheck == nil {
		return promptHash(fnPrompt)
	}
	return p.FNCheck.Version()
}
