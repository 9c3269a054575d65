package domain

import "strconv"

// Stream names of the aggregates. Each command's Stream method returns the
// stream its aggregate lives in, so the application layer loads, decides and
// appends without knowing the naming.

// AccountStream returns "account-{id}": the account with its subscriptions
// and devices.
func AccountStream(id int64) string { return "account-" + strconv.FormatInt(id, 10) }

// ProviderStream returns "provider-{id}".
func ProviderStream(id int64) string { return "provider-" + strconv.FormatInt(id, 10) }

// TariffStream returns "tariff-{id}".
func TariffStream(id int64) string { return "tariff-" + strconv.FormatInt(id, 10) }

// ChannelStream returns "channel-{id}".
func ChannelStream(id int64) string { return "channel-" + strconv.FormatInt(id, 10) }

// CategoryStream returns "category-{id}".
func CategoryStream(id int64) string { return "category-" + strconv.FormatInt(id, 10) }

// TariffTagStream returns "tariff_tag-{id}".
func TariffTagStream(id int64) string { return "tariff_tag-" + strconv.FormatInt(id, 10) }

// RegionStream returns "region-{id}".
func RegionStream(id int64) string { return "region-" + strconv.FormatInt(id, 10) }

// DeviceTypeStream returns "device_type-{id}".
func DeviceTypeStream(id int64) string { return "device_type-" + strconv.FormatInt(id, 10) }

// AdminStream returns "admin-{login}". Admin logins are limited to
// [A-Za-z0-9._@-], so the name needs no escaping.
func AdminStream(login string) string { return "admin-" + login }
