package llmtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"unicode"
)

// Inputs returns the texts of an embeddings request: its input as one
// string or an array of strings (nil for a chat request).
func (r ChatRequest) Inputs() []string {
	if len(r.Input) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(r.Input, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(r.Input, &many)
	return many
}

// isEmbed reports whether r is an embeddings request.
func isEmbed(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/embeddings") }

// Embedding is the vector the server answers for text: a hashed bag of
// words of dim dimensions, L2-normalized. The text is split into words at
// every rune that is neither a letter nor a digit and lowercased; each word
// adds 1 at index FNV-1a-32(word) mod dim. So the cosine of two texts is
// the share of words they have in common, as a normalized count-vector
// product: "red apple" and "green apple" (no hash collision among the
// three words) are 1/2 apart, and texts on one topic, which share words,
// lie nearer each other than texts on another. A text with no word gets
// the unit vector at index 0. WordIndex tells a test where a word lands.
func Embedding(text string, dim int) []float32 {
	v := make([]float64, dim)
	n := 0
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		v[WordIndex(w, dim)]++
		n++
	}
	if n == 0 {
		v[0] = 1
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	out := make([]float32, dim)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// WordIndex is the dimension a (lowercased) word adds to in Embedding.
func WordIndex(word string, dim int) int {
	h := fnv.New32a()
	h.Write([]byte(word))
	return int(h.Sum32() % uint32(dim))
}

// EmbedTokens is the usage the server reports for an embeddings input:
// len(text)/4 + 1 tokens per text.
func EmbedTokens(texts []string) int {
	n := 0
	for _, t := range texts {
		n += len(t)/4 + 1
	}
	return n
}

// embeddings is the body of an embeddings answer: one Embedding per input
// in order, less the last short ones (a Garbled fault sends one short).
// rep.Usage, when set, replaces the token count, and rep.Model the model.
func embeddings(req ChatRequest, rep Reply, model string, dim, short int) []byte {
	if rep.Model != "" {
		model = rep.Model
	} else if req.Model != "" {
		model = req.Model
	}
	in := req.Inputs()
	tokens := EmbedTokens(in)
	if rep.Usage != nil {
		tokens = rep.Usage.Prompt
	}
	data := []any{}
	for i, t := range in[:max(len(in)-short, 0)] {
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": Embedding(t, dim)})
	}
	b, _ := json.Marshal(map[string]any{
		"object": "list", "model": model, "data": data,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	return b
}
