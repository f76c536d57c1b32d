package onsite

import "fmt"

// Codes of a refused prompt, welcome or message, as the API's catalog
// answers them.
const (
	CodeInvalidPrompt  = "invalid_prompt"
	CodeInvalidWelcome = "invalid_welcome"
	CodeInvalidMessage = "invalid_onsite_message"
)

// Error is a refused definition: the code and what is wrong.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// checkText refuses a text over max characters or with a control
// character other than a line break.
func checkText(code, name, s string, max int) error {
	if len([]rune(s)) > max {
		return errorf(code, "%s is at most %d characters", name, max)
	}
	for _, r := range s {
		if r < ' ' && r != '\n' || r == 0x7f {
			return errorf(code, "%s holds a control character", name)
		}
	}
	return nil
}
