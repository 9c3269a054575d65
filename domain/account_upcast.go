package domain

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Version 1 of AccountCreated and AccountUpdated stored region_tag as free
// text; version 2 stores the id of a region, as TVIP's Provider API has it.
const (
	accountCreatedV1 = "AccountCreated.v1"
	accountUpdatedV1 = "AccountUpdated.v1"
)

// upcastRegionTag turns a version 1 account event into version 2: a
// region_tag holding a positive decimal integer becomes that number; any
// other text becomes null (in AccountCreated: absent), since it names no
// region. The stored event keeps the text, so nothing is lost from the
// log. Every other key is passed on as it is.
func upcastRegionTag(keepNull bool) func([]byte) ([]byte, error) {
	return func(data []byte) ([]byte, error) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil, err
		}
		raw, ok := obj["region_tag"]
		if !ok {
			return data, nil
		}
		var text *string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, err
		}
		switch id, err := strconv.ParseInt(strings.TrimSpace(derefOr(text)), 10, 64); {
		case text != nil && err == nil && id > 0:
			obj["region_tag"] = json.RawMessage(strconv.FormatInt(id, 10))
		case keepNull:
			obj["region_tag"] = json.RawMessage("null")
		default:
			delete(obj, "region_tag")
		}
		return json.Marshal(obj)
	}
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func registerAccountUpcasters(r *Registry) {
	r.RegisterUpcaster(accountCreatedV1, AccountCreatedType, upcastRegionTag(false))
	r.RegisterUpcaster(accountUpdatedV1, AccountUpdatedType, upcastRegionTag(true))
}
