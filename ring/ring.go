package ring

// Ring maps a key to the nodes that own it.
type Ring interface {
	// Owners returns up to n distinct nodes for key, the owner first and
	// then the nodes that take over when the ones before them are gone.
	Owners(key string, n int) []string
	// Self is this process's node name.
	Self() string
}

// Single is the one-node ring of the embedded default.
type Single string

// Owners returns the only node.
func (s Single) Owners(string, int) []string { return []string{string(s)} }

// Self returns the only node.
func (s Single) Self() string { return string(s) }
