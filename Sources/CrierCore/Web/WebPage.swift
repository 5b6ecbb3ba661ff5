/// The local page: one HTML document, one script, one style sheet, compiled into the binary (no
/// CDN, nothing fetched from the internet; ES5 and XMLHttpRequest, so an old phone's browser
/// works). The HTML is rendered in the page's language; the script carries both languages'
/// messages and picks by `<html lang>`.
public enum WebPage {
    /// Words of the page, zh and en.
    static let words: [String: (zh: String, en: String)] = [
        "title": ("Crier 播报器", "Crier order speaker"),
        "pair_h": ("配对手机", "Pair this phone"),
        "pair_p": ("要查看详情或修改设置，请站在播报器旁：点“获取配对码”，播报器会说出四位数字，输入即可。", "To see details or change settings, stand next to the box: tap “Get a code”, the box says four digits aloud; type them here."),
        "pair_ask": ("获取配对码", "Get a code"),
        "pair_code": ("配对码", "Code"),
        "pair_go": ("配对", "Pair"),
        "status_h": ("状态", "Status"),
        "link": ("订单服务器", "Order server"),
        "health": ("运行状况", "Health"),
        "volume": ("音量", "Volume"),
        "wifi": ("无线网络", "Wi-Fi"),
        "version": ("版本", "Version"),
        "alerts_h": ("最近播报", "Last alerts"),
        "log_h": ("日志", "Log"),
        "actions_h": ("操作", "Actions"),
        "vol_down": ("音量 −", "Volume −"),
        "vol_up": ("音量 +", "Volume +"),
        "mute": ("静音 / 取消静音", "Mute / unmute"),
        "replay": ("重播", "Replay"),
        "test": ("测试播报", "Test announcement"),
        "settings_h": ("设置", "Settings"),
        "lang": ("播报语言", "Language"),
        "voice": ("声音", "Voice"),
        "rate": ("语速", "Rate"),
        "templates": ("播报内容", "What is said"),
        "server": ("订单服务器地址", "Order server"),
        "ssid": ("无线网络名称", "Wi-Fi name"),
        "psk": ("无线网络密码（留空不改）", "Wi-Fi password (empty: keep)"),
        "country": ("国家代码", "Country"),
        "save": ("保存并应用", "Save and apply"),
        "logout": ("取消配对", "Unpair"),
        "other": ("English", "中文"),
        "setup_h": ("设置无线网络", "Set up the Wi-Fi"),
        "setup_p": ("播报器正在设置模式。选择店里的无线网络，输入密码，点“连接”。", "The box is in setup mode. Pick the shop's network, type its password and tap “Connect”."),
        "setup_pair": ("先在下面配对这部手机（播报器会说出配对码），然后选择网络。", "First pair this phone below (the box says a code), then pick the network."),
        "rescan": ("重新搜索", "Search again"),
        "su_close": ("关闭设置", "Close setup"),
        "hidden": ("隐藏网络", "Hidden network"),
        "connect": ("连接", "Connect"),
        "psk_new": ("无线网络密码（开放网络留空）", "Wi-Fi password (empty: an open network)"),
    ]

    static func t(_ k: String, _ l: Lang) -> String {
        guard let w = words[k] else { return k }
        return escape(l == .zh ? w.zh : w.en)
    }

    /// Text for HTML element content and attribute values.
    public static func escape(_ s: String) -> String {
        var o = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": o += "&amp;"
            case "<": o += "&lt;"
            case ">": o += "&gt;"
            case "\"": o += "&quot;"
            case "'": o += "&#39;"
            default: o.unicodeScalars.append(c)
            }
        }
        return o
    }

    public static func html(lang l: Lang, device: String) -> String {
        let other: Lang = l == .zh ? .en : .zh
        var tpl = ""
        for lang in Lang.allCases {
            for spec in OrderKindSpec.templates {
                let k = "template.\(lang.rawValue).\(spec.name)"
                tpl += "<label>\(lang.rawValue) · \(escape(spec.name))<input name=\"\(k)\" maxlength=\"2000\"></label>"
            }
        }
        var voices = ""
        for lang in Lang.allCases {
            voices += "<label>\(t("voice", l)) (\(lang.rawValue))<input name=\"speech.\(lang.rawValue).voice\" maxlength=\"64\"></label>"
                + "<label>\(t("rate", l)) (\(lang.rawValue))<input name=\"speech.\(lang.rawValue).rate\" type=\"number\" min=\"80\" max=\"450\"></label>"
        }
        return """
            <!doctype html><html lang="\(l.rawValue)"><head><meta charset="utf-8">\
            <meta name="viewport" content="width=device-width,initial-scale=1">\
            <title>\(t("title", l)) · \(escape(device))</title><link rel="stylesheet" href="/app.css"></head><body>
            <header><h1>\(escape(device))</h1><span id="pill">…</span><a class="lang" href="/?lang=\(other.rawValue)">\(t("other", l))</a></header>
            <p id="msg" role="status"></p>
            <section id="setup" hidden><h2>\(t("setup_h", l)) <span id="su-ap"></span></h2><p>\(t("setup_p", l))</p>
            <p id="su-out" role="status"></p><ul id="nets"></ul><p id="su-pair">\(t("setup_pair", l))</p>
            <form id="setupf" hidden><label>\(t("ssid", l))<input name="ssid" maxlength="32" autocomplete="off" autocapitalize="none"></label>
            <label>\(t("psk_new", l))<input name="psk" type="password" maxlength="64" autocomplete="new-password"></label>
            <label class="row"><input name="hidden_net" type="checkbox" value="on">\(t("hidden", l))</label>
            <label id="su-cc" hidden>\(t("country", l)) (CN, GB, US…)<input name="country" maxlength="2" autocapitalize="characters"></label>
            <button>\(t("connect", l))</button> <button id="rescan" type="button" class="plain">\(t("rescan", l))</button> <button id="su-close" type="button" class="plain">\(t("su_close", l))</button></form></section>
            <section id="pair" hidden><h2>\(t("pair_h", l))</h2><p>\(t("pair_p", l))</p>
            <button id="ask" type="button">\(t("pair_ask", l))</button>
            <form id="pairf"><label>\(t("pair_code", l))<input name="code" inputmode="numeric" pattern="[0-9]*" maxlength="4" autocomplete="off"></label>\
            <button>\(t("pair_go", l))</button></form></section>
            <section id="status"><h2>\(t("status_h", l))</h2><dl>
            <dt>\(t("link", l))</dt><dd id="s-link">…</dd><dt>\(t("health", l))</dt><dd id="s-health">…</dd>
            <dt>\(t("volume", l))</dt><dd id="s-volume">…</dd><dt>\(t("wifi", l))</dt><dd id="s-wifi">…</dd>
            <dt>\(t("version", l))</dt><dd id="s-version">…</dd></dl></section>
            <section id="paired" hidden>
            <h2>\(t("actions_h", l))</h2><div class="grid">
            <button data-do="volume_down">\(t("vol_down", l))</button><button data-do="volume_up">\(t("vol_up", l))</button>
            <button data-do="mute">\(t("mute", l))</button><button data-do="replay">\(t("replay", l))</button>
            <button data-do="test" class="wide">\(t("test", l))</button></div>
            <h2>\(t("alerts_h", l))</h2><ol id="alerts"></ol>
            <h2>\(t("settings_h", l))</h2><form id="settings">
            <label>\(t("lang", l))<select name="speech.lang"><option value="zh">中文</option><option value="en">English</option></select></label>
            \(voices)<details><summary>\(t("templates", l))</summary>\(tpl)</details>
            <label>\(t("server", l))<input name="server" placeholder="tcp://192.168.1.10:7700" maxlength="300"></label>
            <label>\(t("ssid", l))<input name="wifi.ssid" maxlength="32" autocomplete="off"></label>
            <label>\(t("psk", l))<input name="wifi.psk" type="password" maxlength="64" autocomplete="new-password"></label>
            <label>\(t("country", l))<input name="wifi.country" maxlength="2" autocapitalize="characters"></label>
            <button>\(t("save", l))</button></form>
            <h2>\(t("log_h", l))</h2><pre id="log"></pre>
            <button id="logout" type="button" class="plain">\(t("logout", l))</button></section>
            <script src="/app.js"></script></body></html>

            """
    }

    public static let style = """
        body{font:16px/1.4 sans-serif;margin:0 auto;max-width:40em;padding:0 12px 24px;color:#222;background:#fafafa}
        header{display:flex;align-items:center;gap:8px;flex-wrap:wrap}h1{font-size:1.3em;margin:12px 0;flex:1}
        h2{font-size:1.1em;margin:20px 0 8px;border-bottom:1px solid #ddd}
        #pill{padding:2px 10px;border-radius:12px;background:#ccc}#pill.ok{background:#9d9}#pill.bad{background:#f99}
        .lang{font-size:.9em}#msg{min-height:1.4em;font-weight:bold}
        dl{display:grid;grid-template-columns:auto 1fr;gap:4px 12px;margin:0}dt{color:#666}dd{margin:0}
        button{font-size:1em;padding:12px;border:1px solid #888;border-radius:8px;background:#fff;margin:4px 0}
        .grid{display:grid;grid-template-columns:1fr 1fr;gap:8px}.wide{grid-column:1/3}.plain{border:0;color:#06c}
        label{display:block;margin:8px 0}input,select{display:block;width:100%;box-sizing:border-box;font-size:1em;padding:8px;margin-top:2px}
        pre{font-size:11px;overflow-x:auto;background:#eee;padding:6px;white-space:pre-wrap;word-break:break-all}
        ol{padding-left:1.4em}#nets{list-style:none;padding:0}#nets button{width:100%;text-align:left;margin:2px 0}
        label.row input{display:inline;width:auto;margin-right:8px}#su-out{font-weight:bold}

        """

    public static let script = """
        (function(){'use strict';
        var T={zh:{up:'已连接',down:'未连接',off:'未设置',ok:'正常',bad:'有问题',asked:'请听播报器说出的四位数字，然后输入。',
        paired:'已配对。',saved:'已保存，正在应用…',done:'好的。',muted:'（静音）',none:'—',err:'出错：',
        lock:'需密码',trying:'正在尝试连接…手机可能会暂时断开播报器的热点。密码错误时热点会回来，这里会显示原因；连接成功时播报器会说“无线网络已连接”。',
        connected:'已连接。',wrong_password:'无线网络密码错误',not_found:'找不到该网络',failed:'无法尝试该网络（请查看日志）',scanning:'正在搜索网络…',su_closed:'设置已关闭，热点随即关闭。',
        ssid_empty:'请输入网络名称',ssid_too_long:'网络名称太长（最多 32 字节）',ssid_unsavable:'网络名称含有无法保存的字符',
        psk_character:'密码含有无效字符',psk_length:'密码须为 8-63 个字符',country_needed:'请输入国家代码',country:'国家代码无效'},
        en:{up:'connected',down:'not connected',off:'not set',ok:'ok',bad:'degraded',asked:'Listen: the box says four digits. Type them here.',
        paired:'Paired.',saved:'Saved; applying…',done:'Done.',muted:' (muted)',none:'—',err:'Error: ',
        lock:'password',trying:'Trying… your phone may drop off the box’s hotspot meanwhile. If the password is wrong the hotspot comes back and this page says so; if it works the box says “Wi-Fi connected”.',
        connected:'Connected.',wrong_password:'Wi-Fi password wrong',not_found:'Network not found',failed:'Could not try the network (see the log)',scanning:'Searching for networks…',su_closed:'Setup closed; the hotspot goes off now.'}};
        var lang=document.documentElement.lang,L=T[lang]||T.en,csrf='',$=function(i){return document.getElementById(i)};
        function say(m){$('msg').textContent=m}
        function req(method,url,data,cb){var x=new XMLHttpRequest();x.open(method,url);
        x.setRequestHeader('Content-Type','application/x-www-form-urlencoded');
        x.onload=function(){var j={};try{j=JSON.parse(x.responseText)}catch(e){}if(j.csrf)csrf=j.csrf;cb(x.status,j)};
        x.onerror=function(){say(L.err+'network')};x.send(data||null)}
        function enc(o){var a=[];for(var k in o)a.push(encodeURIComponent(k)+'='+encodeURIComponent(o[k]));return a.join('&')}
        function text(i,v){$(i).textContent=v==null||v===''?L.none:v}
        var sub=false,timer=null;
        function bars(d){return d>=-55?'▂▄▆█':d>=-67?'▂▄▆':d>=-78?'▂▄':'▂'}
        function portal(j){var su=j.setup,sec=$('setup');sec.hidden=!su;if(!su)return;
        text('su-ap',su.ap);$('su-pair').hidden=!!j.paired;$('setupf').hidden=!j.paired;$('su-cc').hidden=!su.needs_country;
        var o=$('su-out');if(su.phase=='trying')o.textContent=L.trying;else if(su.phase=='scanning')o.textContent=L.scanning;
        else if(su.last)o.textContent=su.last.ssid+': '+(L[su.last.outcome]||su.last.outcome);else if(!sub)o.textContent='';
        var ul=$('nets'),k=(su.networks||[]).map(function(n){return n.ssid}).join('\\n');if(ul.dataset.k===k)return;ul.dataset.k=k;ul.innerHTML='';
        (su.networks||[]).forEach(function(n){var li=document.createElement('li'),b=document.createElement('button');b.type='button';
        b.textContent=bars(n.signal_dbm)+' '+n.ssid+(n.security=='open'?'':' · '+L.lock);b.disabled=!n.joinable;
        b.onclick=function(){var f=$('setupf');f.elements.ssid.value=n.ssid;f.elements.psk.focus()};li.appendChild(b);ul.appendChild(li)})}
        function render(j){portal(j);var p=$('pill');p.textContent=j.healthy?L.ok:L.bad;p.className=j.healthy?'ok':'bad';
        text('s-link',L[j.link]||j.link);text('s-health',j.healthy?L.ok:L.bad);text('s-version',j.version);
        $('pair').hidden=!!j.paired;$('paired').hidden=!j.paired;if(!j.paired){text('s-volume',null);text('s-wifi',null);return}
        var s=j.status||{};text('s-volume',s.volume+' / '+s.volume_max+(s.muted?L.muted:''));
        var w=s.wifi;text('s-wifi',w?(w.ssid||'')+' '+(w.signal_dbm!=null?w.signal_dbm+' dBm ':'')+(w.state||''):null);
        if(s.update&&s.update.booted_slot)text('s-version',j.version+' · slot '+s.update.booted_slot);
        if(s.link&&s.link.server)text('s-link',(L[s.link.state]||s.link.state)+' · '+s.link.server);
        var ol=$('alerts');ol.innerHTML='';(s.last_alerts||[]).forEach(function(a){var li=document.createElement('li');
        li.textContent=(a.time||'').slice(11,19)+' '+a.text;ol.appendChild(li)});
        $('log').textContent=(j.log||[]).join('\\n');
        var f=$('settings');if(!f.dataset.filled&&j.settings){for(var k in j.settings){var e=f.elements[k];if(e)e.value=j.settings[k]}f.dataset.filled='1'}}
        function refresh(){req('GET','/api/status',null,function(c,j){if(c==200){render(j);
        var fast=!!j.setup;if(fast!=!!timer){clearInterval(iv);iv=setInterval(refresh,fast?2000:5000);timer=fast||null}}})}
        $('ask').onclick=function(){req('POST','/api/pair/request?lang='+lang,'',function(c,j){say(c==200?L.asked:L.err+j.message)})};
        $('pairf').onsubmit=function(e){e.preventDefault();req('POST','/api/pair',enc({code:this.elements.code.value}),function(c,j){
        say(c==200?L.paired:L.err+j.message);refresh()})};
        var b=document.querySelectorAll('[data-do]');for(var i=0;i<b.length;i++)b[i].onclick=function(){
        req('POST','/api/action?lang='+lang,enc({csrf:csrf,'do':this.getAttribute('data-do')}),function(c,j){say(c==200?L.done:L.err+j.message);refresh()})};
        $('settings').onsubmit=function(e){e.preventDefault();var o={csrf:csrf},el=this.elements;
        for(var i=0;i<el.length;i++)if(el[i].name)o[el[i].name]=el[i].value;
        req('POST','/api/settings',enc(o),function(c,j){say(c==200?L.saved:L.err+j.message);if(c==200)setTimeout(function(){location.reload()},4000)})};
        $('logout').onclick=function(){req('POST','/api/logout',enc({csrf:csrf}),function(){refresh()})};
        $('setupf').onsubmit=function(e){e.preventDefault();var el=this.elements;sub=true;
        req('POST','/api/setup?lang='+lang,enc({csrf:csrf,ssid:el.ssid.value,psk:el.psk.value,hidden:el.hidden_net.checked?'on':'',country:el.country.value}),
        function(c,j){$('su-out').textContent=c==200?L.trying:L.err+(L[j.error]||j.message);if(c==200)el.psk.value='';refresh()})};
        $('rescan').onclick=function(){req('POST','/api/setup/rescan',enc({csrf:csrf}),function(c,j){if(c!=200)say(L.err+j.message);refresh()})};
        $('su-close').onclick=function(){req('POST','/api/setup/close',enc({csrf:csrf}),function(c,j){say(c==200?L.su_closed:L.err+j.message);refresh()})};
        var iv=setInterval(refresh,5000);refresh()})();

        """
}
