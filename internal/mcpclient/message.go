package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
	result    []byte
	errCode   string // as sent
	errMsg    string
	hasError  bool
}

// decodeMessage decodes one JSON-RPC message. The envelope is strict:
// one JSON object, "jsonrpc" "2.0", no member twice (a host and etdi
// must not read two different results from one message), an id that is
// a number, a string or null.
func decodeMessage(data []byte) (*message, error) {
	// Validity first (encoding/json checks the whole input before decoding,
	// and skips every member of an empty struct without allocating).
	if err := json.Unmarshal(data, &struct{}{}); err != nil {
		return nil, err
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
		if seen[key] {
			return nil, fmt.Errorf("duplicate member name %q in the message", clip(key))
		}
		seen[key] = true
		switch key {
		case "jsonrpc":
			version = string(val) == `"2.0"`
		case "id":
			switch val[0] {
			case 'n':
			case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				m.id = val
			default:
				return nil, fmt.Errorf("the message id is not a number or a string: %s", clip(string(val)))
			}
		case "method":
			if err := json.Unmarshal(val, &m.method); err != nil {
				return nil, fmt.Errorf("the message method: %w", err)
			}
			m.isRequest = true
		case "result":
			m.result, hasResult = val, true
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
	}
	if !version {
		return nil, errors.New(`the message lacks "jsonrpc": "2.0"`)
	}
	switch {
	case m.isRequest && (hasResult || m.hasError):
		return nil, errors.New("the message is both a request and a response")
	case !m.isRequest && m.id == nil:
		return nil, errors.New("the response has no id")
	case !m.isRequest && hasResult == m.hasError:
		return nil, errors.New("the response must have exactly one of result and error")
	}
	return m, nil
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
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0",`)
	if id > 0 {
		b.WriteString(`"id":` + strconv.FormatInt(id, 10) + `,`)
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

// encodeRefusal answers a server request: etdi serves no methods.
func encodeRefusal(id []byte, method string) []byte {
	msg, _ := json.Marshal("etdi does not serve " + clip(method))
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32601,"message":` + string(msg) + `}}`)
}
