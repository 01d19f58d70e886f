// Package prompt is the mechanism behind ac3's prompt files: versioned
// text/template files that a stage embeds and renders into chat messages.
//
// A prompt file starts with a small header of "key: value" lines, the first
// of which must be "version: N", ended by a line "---". The rest is a
// text/template body that defines a "user" section and, optionally, a
// "system" section:
//
//	version: 3
//	description: labels one user turn
//	---
//	{{define "system"}}You label user turns of a conversation.{{end}}
//	{{define "user"}}Turn {{.Turn}}: {{.Text}}{{end}}
//
// Template.Version is the file's name, its declared version and a short hash
// of its full text, so a prompt edit changes the unit keys of the work it
// affects even when nobody bumps the number. The prompt texts themselves live
// with the stages that own them (stages/<stage>/prompts/*.tmpl), not here.
//
// Users may replace a stage's prompt with a template file of their own.
// A stage declares each replaceable prompt with a Spec: the data it renders
// it with, the fields a template must show, the fields that carry the
// answer's form (the contract), and the fields it withholds. ParseFile
// parses such a file and checks it statically before anything is sent,
// following the type of dot and of every variable through range, with and
// helper templates, so a template that does not parse, reaches a field it
// is not given, states the answer's form itself or leaves out the material
// is refused with its file and line. A user's template is rendered with
// only the fields its Spec lets it see, and RenderAnswer appends the form
// of the answer (ac3's, never the user's) to its user message. Its version
// is name@user+hash of its bytes, so it never shares units or cached
// answers with another prompt.
//
// Golden-file checks of rendered prompts are in the prompttest subpackage.
package prompt
