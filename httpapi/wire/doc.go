// Package wire holds the JSON wire forms of the Provider and Admin APIs that
// the standard library does not give: the date and time formats of the APIs
// (DateTime "2026-11-22T17:59:41+0000", Date "2026-11-22", PostTime
// "2026-11-22T17:59:41") and a decoder for request objects as real
// integrations send them.
//
// The decoder is lenient where integrations are known to be sloppy and strict
// where a mistake would lose data:
//
//   - booleans: true/false, 1/0, "1"/"0", "true"/"false";
//   - integers: JSON numbers with an integral value (12, 12.0, 1.2e1) and
//     decimal strings ("12"); fractions, overflow, NaN and the like are errors;
//   - null, and "" for non-string types, mean "not given" for non-nullable
//     fields (clients resend whole records, including fields the API returns
//     as null) and "clear" for nullable ones;
//   - read-only fields (created, last_online, *_dto) are dropped, unknown
//     fields are ignored and can be listed;
//   - numbers are decoded exactly (json.Number), never through float64.
//
// Every getter records its error under the field's name, so one response can
// name every bad field. The package depends on nothing but the standard
// library; httpapi maps its errors to HTTP answers.
package wire
