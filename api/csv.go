package api

import "strings"

// csvSafe keeps a spreadsheet from reading a cell of text that came from
// outside (a title, an external id, a tag) as a formula: text beginning with
// '=', '+', '-', '@', a tab or a carriage return gets a leading "'" (spec
// 4.1 for titles; OWASP's CSV injection advice for the rest). Both CSV
// exports write every such cell through it.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
