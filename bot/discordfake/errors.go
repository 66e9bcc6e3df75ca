package discordfake

// apiError is Discord's JSON error body.
type apiError struct {
	status  int
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Errors  map[string]any `json:"errors,omitempty"`
}

// The errors the server answers with, by Discord's JSON code.

func errUnknownChannel() *apiError {
	return &apiError{status: 404, Code: 10003, Message: "Unknown Channel"}
}

func errUnknownGuild() *apiError {
	return &apiError{status: 404, Code: 10004, Message: "Unknown Guild"}
}

func errUnknownMessage() *apiError {
	return &apiError{status: 404, Code: 10008, Message: "Unknown Message"}
}

func errUnknownEmoji() *apiError {
	return &apiError{status: 400, Code: 10014, Message: "Unknown Emoji"}
}

func errUnknownWebhook() *apiError {
	return &apiError{status: 404, Code: 10015, Message: "Unknown Webhook"}
}

func errUnknownInteraction() *apiError {
	return &apiError{status: 404, Code: 10062, Message: "Unknown interaction"}
}

func errAlreadyAcked() *apiError {
	return &apiError{status: 400, Code: 40060, Message: "Interaction has already been acknowledged."}
}

func errMissingAccess() *apiError {
	return &apiError{status: 403, Code: 50001, Message: "Missing Access"}
}

func errNotAuthor() *apiError {
	return &apiError{status: 403, Code: 50005, Message: "Cannot edit a message authored by another user"}
}

func errEmptyMessage() *apiError {
	return &apiError{status: 400, Code: 50006, Message: "Cannot send an empty message"}
}

func errMissingPermissions() *apiError {
	return &apiError{status: 403, Code: 50013, Message: "Missing Permissions"}
}

func errWrongChannelType() *apiError {
	return &apiError{status: 400, Code: 50024, Message: "Cannot execute action on this channel type"}
}

func errInvalidWebhookToken() *apiError {
	return &apiError{status: 401, Code: 50027, Message: "Invalid Webhook Token"}
}

func errThreadArchived() *apiError {
	return &apiError{status: 400, Code: 50083, Message: "Thread is archived"}
}

func errInvalidJSON() *apiError {
	return &apiError{status: 400, Code: 50109, Message: "The request body contains invalid JSON."}
}

func errThreadExists() *apiError {
	return &apiError{status: 400, Code: 160004, Message: "A thread has already been created for this message"}
}

// formError is a 50035 Invalid Form Body naming the field at path, which
// is a list of keys and indexes such as "embeds", "0", "title".
func formError(code, msg string, path ...string) *apiError {
	leaf := map[string]any{"_errors": []any{map[string]any{"code": code, "message": msg}}}
	for i := len(path) - 1; i > 0; i-- {
		leaf = map[string]any{path[i]: leaf}
	}
	return &apiError{status: 400, Code: 50035, Message: "Invalid Form Body", Errors: map[string]any{path[0]: leaf}}
}
