package domain

import (
	"slices"
	"strconv"
)

// Hand-written JSON of the account events written and read on every
// account create and update (see JSONCodec). FuzzAccountCreatedJSON,
// FuzzAccountUpdatedJSON and FuzzDecodeAccountEvents check them against
// encoding/json.

// accountJSONSize is room for the keys and numbers of an account event;
// strings come on top.
const accountJSONSize = 280

// AppendJSON implements JSONCodec.
func (e AccountCreated) AppendJSON(dst []byte) ([]byte, bool) {
	dst = slices.Grow(dst, accountJSONSize+len(e.Login)+len(e.PinMD5)+len(e.Fullname)+
		ptrLen(e.RemoteCustomField)+ptrLen(e.ContractInfo)+ptrLen(e.MainAddress)+ptrLen(e.AccountDesc))
	dst = strconv.AppendInt(append(dst, `{"account_id":`...), e.AccountID, 10)
	dst = strconv.AppendInt(append(dst, `,"provider":`...), e.Provider, 10)
	dst = AppendJSONString(append(dst, `,"login":`...), e.Login)
	dst = AppendJSONString(append(dst, `,"pin_md5":`...), e.PinMD5)
	dst = AppendJSONString(append(dst, `,"fullname":`...), e.Fullname)
	dst = strconv.AppendBool(append(dst, `,"enabled":`...), e.Enabled)
	dst = appendPtr(dst, `,"remote_custom_field":`, e.RemoteCustomField, AppendJSONString)
	dst = appendPtr(dst, `,"contract_info":`, e.ContractInfo, AppendJSONString)
	dst = appendPtr(dst, `,"main_address":`, e.MainAddress, AppendJSONString)
	dst = appendPtr(dst, `,"account_desc":`, e.AccountDesc, AppendJSONString)
	dst = appendPtr(dst, `,"region_tag":`, e.RegionTag, appendJSONInt64)
	dst = appendPtr(dst, `,"devices_per_account_limit":`, e.DevicesPerAccountLimit, appendJSONInt)
	return append(dst, '}'), true
}

// DecodeJSON implements JSONCodec.
func (e AccountCreated) DecodeJSON(data []byte) (Event, bool) {
	r := NewJSONReader(data)
	r.Expect(`{"account_id":`)
	e.AccountID = r.Int64()
	r.Expect(`,"provider":`)
	e.Provider = r.Int64()
	r.Expect(`,"login":`)
	e.Login = r.Str()
	r.Expect(`,"pin_md5":`)
	e.PinMD5 = r.Str()
	r.Expect(`,"fullname":`)
	e.Fullname = r.Str()
	r.Expect(`,"enabled":`)
	e.Enabled = r.Bool()
	readPtr(&r, `,"remote_custom_field":`, &e.RemoteCustomField, (*JSONReader).Str)
	readPtr(&r, `,"contract_info":`, &e.ContractInfo, (*JSONReader).Str)
	readPtr(&r, `,"main_address":`, &e.MainAddress, (*JSONReader).Str)
	readPtr(&r, `,"account_desc":`, &e.AccountDesc, (*JSONReader).Str)
	readPtr(&r, `,"region_tag":`, &e.RegionTag, (*JSONReader).Int64)
	readPtr(&r, `,"devices_per_account_limit":`, &e.DevicesPerAccountLimit, (*JSONReader).Int)
	r.Expect(`}`)
	return e, r.OK()
}

// AppendJSON implements JSONCodec.
func (e AccountUpdated) AppendJSON(dst []byte) ([]byte, bool) {
	dst = slices.Grow(dst, accountJSONSize+len(e.Login.Value)+len(e.PinMD5.Value)+len(e.Fullname.Value)+
		len(e.RemoteCustomField.Value)+len(e.ContractInfo.Value)+len(e.MainAddress.Value)+len(e.AccountDesc.Value))
	dst = strconv.AppendInt(append(dst, `{"account_id":`...), e.AccountID, 10)
	dst = appendOptional(dst, `,"enabled":`, e.Enabled, appendJSONBool)
	dst = appendOptional(dst, `,"login":`, e.Login, AppendJSONString)
	dst = appendOptional(dst, `,"pin_md5":`, e.PinMD5, AppendJSONString)
	dst = appendOptional(dst, `,"fullname":`, e.Fullname, AppendJSONString)
	dst = appendOptional(dst, `,"remote_custom_field":`, e.RemoteCustomField, AppendJSONString)
	dst = appendOptional(dst, `,"contract_info":`, e.ContractInfo, AppendJSONString)
	dst = appendOptional(dst, `,"main_address":`, e.MainAddress, AppendJSONString)
	dst = appendOptional(dst, `,"account_desc":`, e.AccountDesc, AppendJSONString)
	dst = appendOptional(dst, `,"region_tag":`, e.RegionTag, appendJSONInt64)
	dst = appendOptional(dst, `,"devices_per_account_limit":`, e.DevicesPerAccountLimit, appendJSONInt)
	return append(dst, '}'), true
}

// DecodeJSON implements JSONCodec.
func (e AccountUpdated) DecodeJSON(data []byte) (Event, bool) {
	r := NewJSONReader(data)
	r.Expect(`{"account_id":`)
	e.AccountID = r.Int64()
	readOptional(&r, `,"enabled":`, &e.Enabled, (*JSONReader).Bool)
	readOptional(&r, `,"login":`, &e.Login, (*JSONReader).Str)
	readOptional(&r, `,"pin_md5":`, &e.PinMD5, (*JSONReader).Str)
	readOptional(&r, `,"fullname":`, &e.Fullname, (*JSONReader).Str)
	readOptional(&r, `,"remote_custom_field":`, &e.RemoteCustomField, (*JSONReader).Str)
	readOptional(&r, `,"contract_info":`, &e.ContractInfo, (*JSONReader).Str)
	readOptional(&r, `,"main_address":`, &e.MainAddress, (*JSONReader).Str)
	readOptional(&r, `,"account_desc":`, &e.AccountDesc, (*JSONReader).Str)
	readOptional(&r, `,"region_tag":`, &e.RegionTag, (*JSONReader).Int64)
	readOptional(&r, `,"devices_per_account_limit":`, &e.DevicesPerAccountLimit, (*JSONReader).Int)
	r.Expect(`}`)
	return e, r.OK()
}

func ptrLen(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}
