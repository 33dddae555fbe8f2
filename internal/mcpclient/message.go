package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// message is one JSON-RPC 2.0 message as the server sent it. Result and
// params are slices of the received bytes, not copies: a tools/list page
// of 60 MiB is held once, and parsed under SPEC.md §2 by the caller.
type message struct {
	// id is the raw id (a JSON number or string), nil if absent or null.
	id     []byte
	method string
	// isRequest is set when "method" is present (a request, or a
	// notification if id is nil).
	isRequest bool
	params    []byte
	result    []byte
	errCode   string // as sent
	errMsg    string
	hasError  bool
}

// envelopeNames are the members of a JSON-RPC message.
var envelopeNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// decodeMessage decodes one JSON-RPC message. The envelope is strict:
// one JSON object, "jsonrpc" "2.0", no member twice (a host and etdi
// must not read two different results from one message), an id that is
// a number, a string or null.
func decodeMessage(data []byte) (*message, error) {
	// Validity first, in one pass (json.Valid scans without decoding); the
	// error of a message that is not valid says where, as Unmarshal does.
	if !json.Valid(data) {
		if err := json.Unmarshal(data, &struct{}{}); err != nil {
			return nil, err
		}
		return nil, errors.New("the message is not valid JSON")
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errors.New("the message is not a JSON object")
	}
	i++
	m := &message{}
	seen := map[string]bool{}
	var version, hasResult bool
	for {
		i = skipSpace(data, i)
		if data[i] == '}' {
			break
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		kend := valueEnd(data, i)
		var key string
		if err := json.Unmarshal(data[i:kend], &key); err != nil {
			return nil, err
		}
		i = skipSpace(data, kend)
		i = skipSpace(data, i+1) // the colon
		vend := valueEnd(data, i)
		val := data[i:vend]
		i = vend
		if err := checkMemberName(key, seen); err != nil {
			return nil, err
		}
		if err := m.set(key, val, &version, &hasResult); err != nil {
			return nil, err
		}
	}
	if err := m.checkEnvelope(version, hasResult); err != nil {
		return nil, err
	}
	return m, nil
}

// checkMemberName refuses a member of the envelope seen before, or one
// whose name differs from an envelope member's only in case, and adds it
// to seen.
func checkMemberName(key string, seen map[string]bool) error {
	if seen[key] {
		return fmt.Errorf("duplicate member name %q in the message", clip(key))
	}
	seen[key] = true
	for _, name := range envelopeNames {
		// "Result" beside "result": a peer that matches names
		// case-insensitively (encoding/json) reads the one etdi did
		// not check.
		if key != name && strings.EqualFold(key, name) {
			return fmt.Errorf("member %q of the message differs from %q only in case", clip(key), name)
		}
	}
	return nil
}

// set reads the member key of the envelope, whose raw value is val;
// version and hasResult record "jsonrpc": "2.0" and a result.
func (m *message) set(key string, val []byte, version, hasResult *bool) error {
	switch key {
	case "jsonrpc":
		*version = string(val) == `"2.0"`
	case "id":
		switch val[0] {
		case 'n':
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			m.id = val
		default:
			return fmt.Errorf("the message id is not a number or a string: %s", clip(string(val)))
		}
	case "method":
		if err := json.Unmarshal(val, &m.method); err != nil {
			return fmt.Errorf("the message method: %w", err)
		}
		m.isRequest = true
	case "params":
		m.params = val
	case "result":
		m.result, *hasResult = val, true
	case "error":
		// Whatever its shape, an error is an error: keep what can be shown.
		var e struct {
			Code    json.RawMessage `json:"code"`
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(val, &e) != nil || json.Unmarshal(e.Message, &m.errMsg) != nil {
			m.errMsg = string(val)
		}
		m.errCode, m.hasError = string(e.Code), true
	}
	return nil
}

// checkEnvelope checks the envelope as a whole: JSON-RPC 2.0, and either
// a request or a response with an id and exactly one of result and error.
func (m *message) checkEnvelope(version, hasResult bool) error {
	if !version {
		return errors.New(`the message lacks "jsonrpc": "2.0"`)
	}
	switch {
	case m.isRequest && (hasResult || m.hasError):
		return errors.New("the message is both a request and a response")
	case !m.isRequest && m.id == nil:
		return errors.New("the response has no id")
	case !m.isRequest && hasResult == m.hasError:
		return errors.New("the response must have exactly one of result and error")
	}
	return nil
}

// isID reports whether the message id is the number n.
func (m *message) isID(n int64) bool {
	if m.id == nil || m.id[0] == '"' {
		return false
	}
	f, err := strconv.ParseFloat(string(m.id), 64)
	return err == nil && f == float64(n)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value starting at data[i]. data is
// valid JSON.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(data) && bytes.IndexByte([]byte(",}] \t\r\n"), data[i]) < 0 {
		i++
	}
	return i
}

// stringEnd returns the index after the closing quote of the string that
// starts at data[i].
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// encodeRequest encodes a request (id > 0) or a notification (id 0).
func encodeRequest(id int64, method string, params []byte) []byte {
	if id <= 0 {
		return EncodeRequest(nil, method, params)
	}
	return EncodeRequest(strconv.AppendInt(nil, id, 10), method, params)
}

// encodeRefusal answers a server request: etdi serves no methods.
func encodeRefusal(id []byte, method string) []byte {
	msg, _ := json.Marshal("etdi does not serve " + clip(method))
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32601,"message":` + string(msg) + `}}`)
}

// Message is one JSON-RPC 2.0 message, decoded strictly: one JSON object,
// "jsonrpc": "2.0", no member twice, an id that is a number, a string or
// null, a request or a response but not both. Its slices point into the
// bytes it was decoded from.
type Message struct {
	// ID is the raw id, nil for a notification (or a null id).
	ID []byte
	// Method is set for a request or a notification (Request).
	Method  string
	Request bool
	Params  []byte
	// Result, or Error with ErrCode (as sent) and ErrMsg, for a response.
	Result  []byte
	Error   bool
	ErrCode string
	ErrMsg  string
}

// Decode decodes one message (see Message).
func Decode(data []byte) (*Message, error) {
	m, err := decodeMessage(data)
	if err != nil {
		return nil, err
	}
	return &Message{ID: m.id, Method: m.method, Request: m.isRequest, Params: m.params, Result: m.result,
		Error: m.hasError, ErrCode: m.errCode, ErrMsg: m.errMsg}, nil
}

// IDKey returns a key equal for the ids a JSON-RPC peer takes as the
// same: numbers by value (1 and 1.0), strings by their text; "" for no
// id.
func (m *Message) IDKey() string { return IDKey(m.ID) }

// IDKey is Message.IDKey of a raw id.
func IDKey(id []byte) string {
	if len(id) == 0 {
		return ""
	}
	if id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) != nil {
			return "?" + string(id)
		}
		return "s:" + s
	}
	f, err := strconv.ParseFloat(string(id), 64)
	if err != nil {
		return "?" + string(id)
	}
	return "n:" + strconv.FormatFloat(f, 'g', -1, 64)
}

// EncodeError encodes an error answer to the request with raw id, with
// data (a JSON value) if not nil.
func EncodeError(id []byte, code int, msg string, data []byte) []byte {
	m, _ := json.Marshal(msg)
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	if len(id) == 0 {
		b.WriteString("null")
	} else {
		b.Write(id)
	}
	b.WriteString(`,"error":{"code":` + strconv.Itoa(code) + `,"message":`)
	b.Write(m)
	if data != nil {
		b.WriteString(`,"data":`)
		b.Write(data)
	}
	b.WriteString("}}")
	return b.Bytes()
}

// EncodeResult encodes an answer to the request with raw id.
func EncodeResult(id, result []byte) []byte {
	b := make([]byte, 0, len(result)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// EncodeRequest encodes a request with a raw id (a notification when id
// is nil).
func EncodeRequest(id []byte, method string, params []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0",`)
	if id != nil {
		b.WriteString(`"id":`)
		b.Write(id)
		b.WriteString(",")
	}
	m, _ := json.Marshal(method)
	b.WriteString(`"method":`)
	b.Write(m)
	if params != nil {
		b.WriteString(`,"params":`)
		b.Write(params)
	}
	b.WriteString("}")
	return b.Bytes()
}

// Member returns the raw value of member name of the JSON object obj
// (valid JSON, as a decoded message's slices are), or nil. Duplicate
// names were refused by Decode for the envelope only: Member returns the
// first.
func Member(obj []byte, name string) []byte {
	start, vstart, end := member(obj, name)
	if start < 0 {
		return nil
	}
	return obj[vstart:end]
}

// member finds member name of obj: where the member starts (its name),
// where its value starts, and where it ends (before the comma or brace
// that follows it); start is -1 if there is none.
func member(obj []byte, name string) (start, vstart, end int) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return -1, 0, 0
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return -1, 0, 0
		}
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		start = i
		kend := valueEnd(obj, i)
		var key string
		if json.Unmarshal(obj[i:kend], &key) != nil {
			return -1, 0, 0
		}
		i = skipSpace(obj, kend)
		i = skipSpace(obj, i+1) // the colon
		vend := valueEnd(obj, i)
		if key == name {
			return start, i, vend
		}
		i = vend
	}
}

// WithoutMember returns a copy of the JSON object obj without its member
// name (the first of that name), every other byte as it was; obj itself if
// it has no such member.
func WithoutMember(obj []byte, name string) []byte {
	start, _, end := member(obj, name)
	if start < 0 {
		return obj
	}
	// Remove the member with the comma that separates it from a neighbour.
	before := bytes.TrimRight(obj[:start], " \t\r\n")
	after := obj[end:]
	rest := bytes.TrimLeft(after, " \t\r\n")
	switch {
	case len(rest) > 0 && rest[0] == ',':
		after = rest[1:]
	case len(before) > 0 && before[len(before)-1] == ',':
		before = before[:len(before)-1]
	}
	out := make([]byte, 0, len(obj)-(end-start))
	out = append(out, before...)
	return append(out, after...)
}

// KeepElements returns a copy of the JSON object obj in which the array
// that is the value of member name holds only its elements i for which
// keep(i) is true; every other byte of obj, and every kept element, is as
// it was. obj must be valid JSON (as a decoded message's slices are).
func KeepElements(obj []byte, name string, keep func(i int) bool) ([]byte, error) {
	start, off, end := member(obj, name)
	if start < 0 || obj[off] != '[' {
		return nil, fmt.Errorf("member %q is not an array", name)
	}
	arr := obj[off:end]
	var out []byte
	out = append(out, obj[:off]...)
	out = append(out, '[')
	n, kept := 0, 0
	i := skipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := valueEnd(arr, i)
		if keep(n) {
			if kept > 0 {
				out = append(out, ',')
			}
			out = append(out, arr[i:end]...)
			kept++
		}
		n++
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	out = append(out, ']')
	return append(out, obj[off+len(arr):]...), nil
}

// Names returns the member names of the JSON object obj (valid JSON, as a
// decoded message's slices are), unescaped, in order, duplicates
// included; nil if obj is not an object.
func Names(obj []byte) []string {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	names := []string{}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return names
		}
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		kend := valueEnd(obj, i)
		var key string
		if json.Unmarshal(obj[i:kend], &key) != nil {
			return names
		}
		names = append(names, key)
		i = skipSpace(obj, kend)
		i = skipSpace(obj, i+1) // the colon
		i = valueEnd(obj, i)
	}
}
