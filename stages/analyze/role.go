package analyze

// Role returns the model role the analyzer's calls use.
func (a *Analyzer) Role() string { return a.opts.Role }
