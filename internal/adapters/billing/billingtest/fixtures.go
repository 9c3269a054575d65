package billingtest

import "strings"

// tariffJSON is a conforming Tariff (2025-03-04 model) with billing id ID.
const tariffJSON = `{"id":ID,"tms_id":1ID,"name":"Base ID","cost":"300 ₽","period":"per month",
 "description":"Sixty channels","channel_count":60,"banner":"https://cdn.example.tv/banner-ID.png",
 "background_color":"#1A237E","benefits":["HD","Catch-up for 7 days"]}`

func tariff(id string) string { return strings.ReplaceAll(tariffJSON, "ID", id) }

// Cabinet is a conforming Cabinet: a SINGLE group (tariffs 1 and 2, current
// subscription to 1) and a MULTI group (tariff 3).
var Cabinet = `{"contacts":"Support: +1 555 0100",
 "account":{"id":42,"fullname":"Alice Smith","balance":"120.50","enabled":true,"account_credentials":null},
 "services":[{"type":"iptv","title":"Television","description":null,"groups":[
  {"title":"Base plans","type":"SINGLE",
   "offers":[{"tariff":` + tariff("2") + `,"from":"2025-04-01T00:00:00+0300"}],
   "subscription":{"id":7,"from":"2025-01-01T00:00:00+0300","to":null,"cancel_date":"2025-03-01T00:00:00+0300","tariff":` + tariff("1") + `},
   "archiveSubscriptions":[],"futureSubscriptions":[]},
  {"title":"Packages","type":"MULTI",
   "offers":[{"tariff":` + tariff("3") + `,"from":"2025-04-01T00:00:00+0300"}],
   "subscriptions":[]}]}]}`

// TariffDetail is a conforming GET /api/tariff/{id} answer for id.
func TariffDetail(id string) string {
	return `{"tariff":` + tariff(id) + `,
 "channels":[{"name":"News 24","logo_url":"https://cdn.example.tv/n24.png","description":"News","number":1,"categories":[1]},
  {"name":"Sport","logo_url":"https://cdn.example.tv/s.png","description":"Sport","number":2,"categories":[2,1]}],
 "categories":{"1":"News","2":"Sport"}}`
}

// Result is a conforming Result object of switch, subscribe, unsubscribe.
var Result = `{"status":200,"message":null,"subscription":{"id":8,"from":"2025-04-01T00:00:00+0300","to":null,"cancel_date":null,"tariff":` + tariff("2") + `}}`
