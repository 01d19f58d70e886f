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
// Golden-file checks of rendered prompts are in the prompttest subpackage.
package prompt
