package config

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// How an endpoint gets its API key. api_key_env names the environment
// variable that holds it; the file never holds the key. An endpoint that
// names a variable needs it: while the variable is unset or empty, nothing
// is sent to the endpoint and a command that would call it refuses to start
// (llm.KeyError, with the line below). An endpoint that names none needs no
// key and is sent none, the usual local vLLM, llama.cpp or Ollama server:
//
//	local: {base_url: "http://127.0.0.1:8000/v1", kind: vllm}
//
// A server that wants a key it was not sent answers 401, which stops the
// run at its first call with a line saying to set api_key_env.

// envName is what a shell accepts as a variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// keyLines records the line of each endpoint's api_key_env, for the error
// a command gives when the variable is unset. That is found only when a
// command calls the endpoint, long after the file's nodes are gone.
func (c *File) keyLines(doc *yaml.Node) {
	for name, ep := range c.Endpoints {
		if n := lookup(doc, "endpoints", name, "api_key_env"); n != nil {
			ep.keyLine = n.Line
			c.Endpoints[name] = ep
		}
	}
}

// keyWhere names endpoint name's api_key_env as the config's errors do:
// "line 9: endpoints.openai.api_key_env".
func (ep endpointConfig) keyWhere(name string) string {
	where := "endpoints." + name + ".api_key_env"
	if ep.keyLine > 0 {
		where = fmt.Sprintf("line %d: %s", ep.keyLine, where)
	}
	return where
}

// keyFrom is keyWhere with the config file named, for an error met after
// Load (llm.KeyError).
func (c *File) keyFrom(name string, ep endpointConfig) string {
	if c.path == "" {
		return ep.keyWhere(name)
	}
	return "config " + c.path + ": " + ep.keyWhere(name)
}

// checkKeyVar refuses an api_key_env that cannot be a variable's name. The
// usual cause is the key itself pasted there (or ${VAR}, which the file
// expands to the key), so the value is never repeated in the message: it
// would land in a terminal, a CI log or a bug report.
func (ep endpointConfig) checkKeyVar(name string) error {
	v := ep.APIKeyEnv
	if v == "" {
		return nil
	}
	why := ""
	switch {
	case !envName.MatchString(v):
		why = "is not the name of an environment variable (letters, digits and _)"
	case looksLikeKey(v):
		why = "looks like a key, not the name of the variable that holds one"
	default:
		return nil
	}
	return fmt.Errorf("%s: the value (not shown here) %s; write the variable's name, e.g. api_key_env: OPENAI_API_KEY, never the key or ${VAR}", ep.keyWhere(name), why)
}

// looksLikeKey reports whether a valid variable name is more likely a key:
// long, with digits and lower-case letters, and either mixed case or no
// underscore, which variable names (OPENAI_API_KEY) rarely are and random
// keys usually are.
func looksLikeKey(s string) bool {
	var lower, upper, digit bool
	for _, r := range s {
		lower = lower || unicode.IsLower(r)
		upper = upper || unicode.IsUpper(r)
		digit = digit || unicode.IsDigit(r)
	}
	return digit && lower && (len(s) >= 32 && upper || len(s) >= 20 && !strings.Contains(s, "_"))
}
