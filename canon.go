package millrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// canonicalJSON writes one encoding per JSON value: object keys sorted
// (the last of duplicate keys wins, as in jsonb), no insignificant space,
// strings as encoding/json writes them, and numbers by their exact decimal
// value (canonicalNumber). Two documents get the same encoding if and only
// if they are the same JSON value, whatever their number's size or
// precision: decoding through float64 made 1234567890123456700 and
// 1234567890123456789 one value.
func canonicalJSON(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON value")
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, x); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, x any) error {
	switch v := x.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		s, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(s)
	case json.Number:
		n, err := canonicalNumber(string(v))
		if err != nil {
			return err
		}
		b.WriteString(n)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeCanonical(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unexpected JSON value %T", x)
	}
	return nil
}

// canonicalNumber writes the exact value of JSON number s in one form: its
// significant digits, without leading or trailing zeros, laid out as
// encoding/json lays out a float64 (plain notation from 1e-6 to below
// 1e21, else d.ddde±x), so that every number a float64 holds exactly in
// its shortest form (640, 1.5, 1e+21) keeps the encoding, and so the
// unique key, it had when keys were made through float64. Zero is "0"
// (-0 is the same value, as in jsonb).
func canonicalNumber(s string) (string, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.ParseInt(strings.TrimPrefix(s[i+1:], "+"), 10, 32)
		if err != nil {
			return "", fmt.Errorf("number %s: exponent out of range", s)
		}
		exp = e
	}
	digits := mant
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		digits = mant[:i] + mant[i+1:]
		exp -= int64(len(mant) - i - 1)
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", fmt.Errorf("invalid number %q", s)
	}
	// The value is digits × 10^exp.
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", nil
	}
	t := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(t))
	digits = t
	// point: the decimal exponent of the first digit (value = 0.d1d2… × 10^point).
	point := exp + int64(len(digits))
	var out strings.Builder
	if neg {
		out.WriteByte('-')
	}
	switch {
	case point > 21 || point < -5:
		// d.ddd e±x, as strconv's 'e' format with encoding/json's cleanup.
		out.WriteString(digits[:1])
		if len(digits) > 1 {
			out.WriteByte('.')
			out.WriteString(digits[1:])
		}
		e := point - 1
		out.WriteByte('e')
		if e >= 0 {
			out.WriteByte('+')
		}
		out.WriteString(strconv.FormatInt(e, 10))
	case point <= 0:
		out.WriteString("0.")
		out.WriteString(strings.Repeat("0", int(-point)))
		out.WriteString(digits)
	case point >= int64(len(digits)):
		out.WriteString(digits)
		out.WriteString(strings.Repeat("0", int(point)-len(digits)))
	default:
		out.WriteString(digits[:point])
		out.WriteByte('.')
		out.WriteString(digits[point:])
	}
	return out.String(), nil
}
