package judge

// Contexts lists the judge context variants, the default first.
func Contexts() []string { return []string{ContextFull, ContextUserOnly, ContextFinalAnswer} }

// Orders lists the order modes, the default first.
func Orders() []string { return []string{OrderRandom, OrderBoth} }
