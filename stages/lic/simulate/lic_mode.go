package simulate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/stages/lic/grade"
)

// ModeLiC plays the user as LiC's simulator does (Laban et al.'s
// reference code, which the AC3 paper ran): the first shard as written;
// after it the user simulator sees the conversation, the shards given so
// far and those not yet given, chooses which one to give next (at most one
// per message, possibly none, when the assistant asked something the
// shards do not answer) and words it itself. The conversation ends once
// every shard has been given and answered, or as soon as an answer is
// graded correct, as LiC stops a conversation on its first correct answer.
const ModeLiC = "lic"

// licTurnCap bounds a ModeLiC conversation at this many user messages per
// shard. LiC sets no bound; without one a simulator that keeps giving
// nothing would never end. A replicate that reaches it fails, with the
// reason, and 'ac3 retry' draws it again.
const licTurnCap = 3

// licUserPrompt is the ModeLiC user simulator's instruction; ours, with
// the rules of LiC's (one piece at most, the whole piece, reworded,
// statements rather than questions, brief).
const licUserPrompt = `You play a user talking to an AI assistant. You have a task in mind, split into numbered pieces of information; some you have already given, the rest you have not.
Write your next message to the assistant:
- give at most one piece you have not given yet: the one the assistant most needs now, the most basic first; or none, when the assistant asked something your pieces do not answer (then say you do not know, or that it does not matter);
- a piece you give must be given whole: every number, name, value and condition in it, nothing changed; put it in your own casual words rather than copying it;
- never give a piece twice, nothing beyond your pieces, and never solve the task or correct the assistant yourself;
- write statements, not questions, briefly, as a user in a hurry would.
Answer with a JSON object: {"message": "your message to the assistant", "piece": the number of the piece you give, or 0 for none}.`

// licUserRequest is the ModeLiC simulator's input: the conversation so far
// and the pieces, given and not, by number (1 is the first shard).
func licUserRequest(history []conv.Message, shards []string, given []bool) []conv.Message {
	var b strings.Builder
	b.WriteString("Conversation so far:\n")
	for _, m := range history {
		fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, m.Content)
	}
	for _, part := range []struct {
		title string
		given bool
	}{{"Pieces you have given:", true}, {"Pieces you have not given yet:", false}} {
		b.WriteString(part.title + "\n")
		for i, s := range shards {
			if given[i] == part.given {
				fmt.Fprintf(&b, "(%d) %s\n", i+1, s)
			}
		}
		b.WriteString("\n")
	}
	return []conv.Message{{Role: conv.System, Content: licUserPrompt}, {Role: conv.User, Content: strings.TrimSpace(b.String())}}
}

// licUserAnswer is the ModeLiC simulator's answer.
type licUserAnswer struct {
	Message string `json:"message"`
	Piece   *int   `json:"piece"`
}

// parseLiCUser reads the simulator's answer; a piece that is not one of
// those not yet given is a malformed answer, asked again.
func parseLiCUser(text string, given []bool) (licUserAnswer, error) {
	var a licUserAnswer
	if err := parse.JSON(text, &a); err != nil {
		return a, err
	}
	a.Message = strings.TrimSpace(a.Message)
	switch {
	case a.Message == "":
		return a, errors.New(`no "message"`)
	case a.Piece == nil:
		return a, errors.New(`no "piece" (0 when none is given)`)
	case *a.Piece < 0 || *a.Piece > len(given):
		return a, fmt.Errorf("piece %d: there are pieces 1 to %d", *a.Piece, len(given))
	case *a.Piece > 0 && given[*a.Piece-1]:
		return a, fmt.Errorf("piece %d was given already", *a.Piece)
	}
	return a, nil
}

// playLiC plays one replicate in ModeLiC. ask sends one request and
// returns the answer; reply asks the respondent for the next assistant
// turn; check grades an answer (nil: no grader). It returns a reason when
// the replicate fails on its own (the turn cap), "" when it finished.
func (s *Stage) playLiC(ctx context.Context, tr *Trajectory, r, reroll int,
	reply func(turn int) error, check func(answer string) (*grade.Result, error)) (string, error) {
	shards := tr.Shards
	given := make([]bool, len(shards))
	for turn := 1; ; turn++ {
		if turn > licTurnCap*len(shards) {
			return fmt.Sprintf("the user simulator gave only %d of %d pieces in %d messages", count(given), len(shards), turn-1), nil
		}
		piece := 1
		text := shards[0]
		if turn > 1 {
			req := llm.Request{Role: s.opts.UserRole, Stage: StageName, JSON: true, Messages: licUserRequest(tr.Messages, shards, given),
				SampleIndex: sampleBase + r - 1, Reroll: reroll}
			a, _, err := llm.CallParsed(ctx, s.client, req, s.opts.Retries, func(resp llm.Response) (licUserAnswer, error) {
				return parseLiCUser(resp.Text, given)
			})
			if err != nil {
				return "", fmt.Errorf("user turn %d: %w", turn, err)
			}
			text, piece = a.Message, *a.Piece
		}
		if piece > 0 {
			given[piece-1] = true
		}
		tr.Revealed = append(tr.Revealed, piece)
		tr.Messages = append(tr.Messages, conv.Message{Role: conv.User, Content: text})
		if err := reply(turn); err != nil {
			return "", err
		}
		done := count(given) == len(shards)
		if check != nil {
			g, err := check(tr.Messages[len(tr.Messages)-1].Content)
			if err != nil {
				return "", err
			}
			if g.Status == grade.Pass || done {
				tr.Grade = g
				return "", nil
			}
		}
		if done {
			return "", nil
		}
	}
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
