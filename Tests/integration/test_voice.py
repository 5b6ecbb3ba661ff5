"""`crier voice`: the recording script and pack checks (docs/voice.md, issue 33)."""
import subprocess

from conftest import CRIER


def clips(box, *args):
    r = box.run("voice", "clips", *args)
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert all(len(row) == 2 and row[0] and row[1] for row in rows), r.stdout
    return rows


def test_voice_clips_prints_the_recording_script_for_each_language(box):
    zh = clips(box, "--lang", "zh")
    en = clips(box, "--lang", "en")
    for rows in (zh, en):
        names = [n for n, _ in rows]
        texts = [t for _, t in rows]
        assert len(set(names)) == len(names), "names are unique"
        assert len(set(texts)) == len(texts), "each text is recorded once"
        assert all(n.replace("_", "").isalnum() and n == n.lower() and n.isascii() for n in names)
    zh = dict(zh)
    en = dict(en)
    # Template fragments (status prompts too), number words, units, order-code letters.
    assert zh["tpl_new_customer"] == "新客户来了" and zh["tpl_payment"] == "收款"
    assert zh["tpl_link_down_1"] == "服务连接失败" and zh["tpl_link_down_2"] == "请检查网络"
    assert zh["tpl_started"] == "音箱已启动"
    assert (zh["four"], zh["ten"], zh["wan"], zh["two_liang"], zh["one_yao"]) == ("四", "十", "万", "两", "幺")
    assert (zh["number"], zh["yuan"], zh["point"], zh["percent"]) == ("号", "元", "点", "百分之")
    assert (zh["letter_a"], zh["letter_x"]) == ("诶", "艾克斯")
    assert en["tpl_new_customer"] == "New customer" and en["tpl_payment"] == "Payment received"
    assert (en["forty_two"], en["thousand"], en["twenty_first"], en["oclock"]) == ("forty-two", "thousand", "twenty-first", "o'clock")
    assert en["letter_a"] == "A" and en["degrees_celsius"] == "degrees Celsius"
    assert 80 < len(zh) < 150 and 250 < len(en) < 330


def test_voice_clips_follows_the_configs_templates(box):
    box.write_conf("template.zh.new_customer = 欢迎光临，请{number}号桌取餐\n")
    zh = dict(clips(box, "--config", box.conf, "--lang", "zh"))
    assert zh["tpl_new_customer_1"] == "欢迎光临"
    assert zh["tpl_new_customer_2"] == "请"
    assert zh["tpl_new_customer_3"] == "号桌取餐"
    # new_customers still says the default 新客户来了.
    assert zh["tpl_new_customers"] == "新客户来了"


def test_voice_clips_usage_errors(box):
    r = box.run("voice", "clips", "--lang", "fr")
    assert r.returncode == 2 and "--lang expects zh or en" in r.stderr
    r = box.run("voice", "clips")
    assert r.returncode == 2 and "needs --lang" in r.stderr
    r = box.run("voice", "clips", "--lang", "zh", "--config", str(box.tmp / "nope.conf"))
    assert r.returncode == 1 and "nope.conf" in r.stderr
    r = box.run("voice", "nonsense")
    assert r.returncode == 2
