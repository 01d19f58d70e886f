package simulate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/lic/grade"
)

// The system prompts are ours, with the content of the AC3 paper's v2
// prompts (its Prompts 8–11): the task, the clarification the user may be
// asked for (code, database), what to say when no function fits (actions),
// and the output contract the grader relies on, as v2 adds to LiC's: a fixed answer prefix for math, one top-level function in one
// fenced block for code, one fenced sql block for database, and every
// call needed so far, repeated each turn, for actions. The contract is
// kept apart from the task's statement so that a user's respondent prompt
// (Prompts.Respondent) gets the same one appended.
var (
	taskIntros = map[string]string{
		grade.TaskMath:     `You are a careful problem solver. Work through the grade-school math problem the user gives you step by step.`,
		grade.TaskCode:     `You help a user write a Python function that solves a programming question. When something is unclear, you may ask the user what they need.`,
		grade.TaskDatabase: `You help a user write SQL queries over the database whose schema is given below. When something is unclear, you may ask the user what they need.`,
		grade.TaskActions:  `You compose function calls. Given the user's request and the functions documented below, make the one or more calls that achieve it. If none of the functions fits, say so; if the request lacks a parameter a function requires, say that too.`,
	}
	taskContracts = map[string]string{
		grade.TaskMath: `Whenever you give an answer, end your reply with one line of the form
` + grade.AnswerPrefix + ` <number>
with the number alone on that line (no units, no words).`,
		grade.TaskCode: `Whenever you give code:
- write exactly one top-level function definition (helpers go inside it), taking its inputs as arguments, never from stdin or input();
- put the whole solution in a single fenced code block marked python, and no other code block in the reply;
- do not add example calls or tests at the top level.`,
		grade.TaskDatabase: `Whenever you give a query, put it in a single fenced code block marked sql, and write no other sql block in the reply.`,
		grade.TaskActions:  `Reply with the function calls only, no other text. In every reply, write every function call needed for the user's whole request so far, including the calls you already gave in earlier replies, in Python call syntax, as a list: [func_a(arg=value), func_b(arg=value)].`,
	}
)

// systemPrompt is our system prompt of task: its statement, then its
// contract; genericPrompt for a task we do not know.
func systemPrompt(task string) string {
	intro, ok := taskIntros[task]
	if !ok {
		return genericPrompt
	}
	return intro + "\n" + taskContracts[task]
}

const genericPrompt = `You help a user with their request. The user may give the details over several messages; work with what you have been told so far.`

// Prompt is the system prompt of an instance: the task's contract plus
// what the task needs in view (the database schema, the function
// documentation).
func Prompt(in *grade.Instance) string {
	p := systemPrompt(in.Task)
	switch in.Task {
	case grade.TaskDatabase:
		if s := strings.TrimSpace(in.SchemaSQL); s != "" {
			p += "\n\nSchema:\n" + s
		}
	case grade.TaskActions:
		if len(in.Function) > 0 {
			p += "\n\nFunctions:\n" + string(in.Function)
		}
	}
	return p
}

// userSimPrompt is the user simulator's instruction. The simulator writes
// one user message that conveys one piece of the task, no more, in a
// user's plain words.
const userSimPrompt = `You play a user talking to an AI assistant. You have a task in mind, split into pieces of information, and you give the assistant one piece per message.
You will see the conversation so far and the piece to give now. Write your next message to the assistant:
- convey all of the information in that piece, and nothing from pieces not yet given;
- keep every number, name, value and constraint exactly as in the piece;
- write briefly and casually, as a user would; you may react to the assistant's last reply in a few words;
- never solve the task or correct the assistant's work yourself.
Reply with the message only.`

// userSimRequest is the user simulator's input for revealing shard next
// after history.
func userSimRequest(history []conv.Message, next string) []conv.Message {
	var b strings.Builder
	b.WriteString("Conversation so far:\n")
	for _, m := range history {
		fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, m.Content)
	}
	b.WriteString("Piece to give now:\n")
	b.WriteString(next)
	return []conv.Message{{Role: conv.System, Content: userSimPrompt}, {Role: conv.User, Content: b.String()}}
}

// promptsVersion changes whenever a prompt does, so stored trajectories
// made under other prompts are told apart.
func promptsVersion() string {
	h := sha256.New()
	for _, t := range []string{grade.TaskMath, grade.TaskCode, grade.TaskDatabase, grade.TaskActions} {
		h.Write([]byte(systemPrompt(t)))
		h.Write([]byte{0})
	}
	h.Write([]byte(genericPrompt))
	h.Write([]byte{0})
	h.Write([]byte(userSimPrompt))
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func promptHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:12]
}
