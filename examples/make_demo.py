"""Write kbflow's demo corpus: four short Chinese documents about one fictional city's water management.

All text is original and fictional (清川市 and its districts, reservoirs and figures are made up).
Output is byte-for-byte deterministic: run it twice and the files have the same md5.

    .venv/bin/python examples/make_demo.py [OUT_DIR]

OUT_DIR defaults to examples/corpus/ beside this script. Needs python-docx and reportlab
(the project's `test` extra).
"""
from __future__ import annotations

import datetime as dt
import io
import re
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "corpus"

# One fixed instant for every timestamp the formats carry.
FIXED_DATETIME = dt.datetime(2025, 1, 1, 0, 0, 0)
FIXED_ZIP_TIME = (2025, 1, 1, 0, 0, 0)

# --------------------------------------------------------------------------------------------
# 1. water_management_policy.docx
# --------------------------------------------------------------------------------------------

POLICY_TITLE = "清川市水资源管理办法"
POLICY_SUBTITLE = "（2024年3月1日清川市人民政府令第12号公布　自2024年5月1日起施行）"

# (kind, text): kind is "h1" / "h2" / "h3" / "p" / "caption" / "table"
POLICY_TABLE = [
    ["行政区", "2024年度指标", "2025年度指标", "主要水源"],
    ["东湖区", "21500", "21000", "青龙湖水库"],
    ["西岭区", "16800", "16500", "白石水库"],
    ["南滨区", "19200", "18800", "松溪水库"],
    ["北塘区", "12600", "12400", "柳湾水库"],
    ["新港区", "9900", "10300", "清江过境水"],
]

POLICY_BODY: list[tuple[str, str]] = [
    ("h1", "第一章 总则"),
    ("h2", "第一节 目的与适用范围"),
    ("p", "为了加强水资源的统一管理，促进水资源的节约、保护和合理开发利用，保障城乡居民生活用水和经济社会"
          "可持续发展，结合本市实际，制定本办法。"),
    ("p", "本市行政区域内开发、利用、节约、保护水资源和防治水害，适用本办法。"),
    ("h2", "第二节 管理体制"),
    ("p", "市水务局是本市水资源的主管部门，负责全市水资源的统一管理和监督工作，具体承担水资源调查评价、"
          "用水总量控制、取水许可审批、节约用水指导和水资源保护等职责。东湖区、西岭区、南滨区、北塘区和新港区"
          "的水务主管部门按照管理权限，负责本辖区内水资源的日常管理工作。发展改革、自然资源、生态环境、"
          "住房城乡建设、农业农村等部门在各自职责范围内，做好水资源管理的相关工作。乡镇人民政府和街道办事处"
          "应当协助做好辖区内的节约用水宣传、取水设施巡查和水事纠纷调处等工作。"),
    # A chapter heading with no body of its own, directly followed by a subheading.
    ("h1", "第二章 水资源配置与取水管理"),
    ("h2", "第一节 用水总量控制"),
    ("p", "本市实行用水总量控制制度。全市年度用水总量控制指标为86000万立方米，其中市级统筹调剂指标为"
          "6000万立方米，其余指标分解至各区。各区年度用水指标见表1。"),
    ("caption", "表1 各区年度用水指标（万立方米）"),
    ("table", ""),
    ("p", "区年度用水量达到年度用水指标90%的，市水务局应当向该区发出预警通知；超过年度用水指标的，"
          "暂停审批该区新增取水许可。"),
    ("h2", "第二节 取水许可"),
    ("p", "直接从江河、湖泊、水库或者地下取用水资源的单位和个人，应当依法申请领取取水许可证，并缴纳水资源费。"),
    ("h3", "一、申请与审批"),
    ("p", "申请取水的单位或者个人应当向市水务局提交取水申请书、建设项目水资源论证报告以及与第三者利害关系的"
          "相关说明。年取水量在50万立方米以上的，市水务局应当组织专家对水资源论证报告进行技术审查。"
          "市水务局应当自受理申请之日起20个工作日内作出审批决定；需要专家审查的，审查时间不计入审批期限，"
          "但最长不得超过30日。审批决定应当书面告知申请人，不予批准的应当说明理由。"),
    ("h3", "二、有效期与延续"),
    ("p", "取水许可证有效期一般为5年，最长不超过10年。有效期届满需要延续的，取水单位或者个人应当在有效期"
          "届满45日前向原审批机关提出申请。"),
    ("h2", "第三节 地下水管理"),
    ("p", "中心城区范围内禁止新建自备取水井。北塘区西部的地下水超采区内，已有自备井应当于2026年12月31日前"
          "全部封停。"),
    ("h1", "第三章 节约用水"),
    ("p", "本市推行节水型社会建设，鼓励单位和个人使用节水器具，推广再生水和雨水利用。"),
    ("h2", "第一节 计划用水"),
    ("p", "年用水量在1万立方米以上的非居民用水户实行计划用水管理。用水户应当于每年11月30日前向所在区水务"
          "主管部门申报下一年度用水计划，区水务主管部门根据用水定额、上年度实际用水量和节水评价结果核定"
          "年度用水计划，并分解到月。用水户应当按照规定安装计量设施，建立用水台账，每季度报送用水情况。"
          "连续两年超计划用水的用水户，应当开展水平衡测试，并在测试完成后六个月内制定节水改造方案。"),
    ("h2", "第二节 阶梯水价"),
    ("p", "居民生活用水实行阶梯水价制度。第一阶梯为年用水量180立方米以下（含），水价为每立方米3.20元；"
          "第二阶梯为181至260立方米，水价为每立方米4.30元；第三阶梯为260立方米以上，水价为每立方米7.60元。"),
    ("h3", "超计划累进加价"),
    ("p", "非居民用水户超计划用水20%以内（含）的部分，按水价的1倍加价收费；超计划20%以上至40%（含）的部分，"
          "按水价的2倍加价收费；超计划40%以上的部分，按水价的3倍加价收费。"),
    ("h1", "第四章 水资源保护"),
    ("h2", "第一节 饮用水水源保护区"),
    ("p", "青龙湖水库、白石水库和松溪水库为本市集中式饮用水水源地，按照规定划定一级保护区和二级保护区。"),
    ("h3", "一、一级保护区"),
    ("p", "一级保护区内禁止新建、改建、扩建与供水设施和保护水源无关的建设项目，禁止从事网箱养殖、游泳、"
          "垂钓等可能污染饮用水水体的活动。"),
    ("h3", "二、二级保护区"),
    ("p", "二级保护区内禁止新建、改建、扩建排放污染物的建设项目，已建成的由区人民政府责令拆除或者关闭。"),
    ("h2", "第二节 水质监测"),
    ("p", "市水务局会同市生态环境局在主要水源地设置水质自动监测站，全市共设置水质自动监测站14座，"
          "并于每月5日前向社会公布上月水源地水质状况。"),
    ("h1", "第五章 附则"),
    ("p", "本办法自2024年5月1日起施行。2015年发布的《清川市城市节约用水管理规定》同时废止。"),
]


def _set_east_asian_font(style, name: str) -> None:
    from docx.oxml.ns import qn

    rpr = style.element.get_or_add_rPr()
    fonts = rpr.find(qn("w:rFonts"))
    if fonts is None:
        fonts = rpr.makeelement(qn("w:rFonts"), {})
        rpr.append(fonts)
    fonts.set(qn("w:eastAsia"), name)
    # theme fonts would override the explicit East Asian font in Word
    for attr in ("w:eastAsiaTheme",):
        if fonts.get(qn(attr)) is not None:
            del fonts.attrib[qn(attr)]


def _add_seq_caption(doc, text: str) -> None:
    """Add a caption like Word's Insert Caption: "表" + { SEQ 表 \\* ARABIC } (cached "1") + rest.

    `text` is the whole caption as displayed, e.g. "表1 各区…"; its number becomes the field result.
    """
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    label, number, rest = re.match(r"(\D+)(\d+)(.*)", text).groups()
    para = doc.add_paragraph(style="Caption")
    para.alignment = WD_ALIGN_PARAGRAPH.CENTER
    para.add_run(label)

    def fld_char(kind: str) -> None:
        run = para.add_run()
        el = OxmlElement("w:fldChar")
        el.set(qn("w:fldCharType"), kind)
        run._r.append(el)

    fld_char("begin")
    instr = OxmlElement("w:instrText")
    instr.set(qn("xml:space"), "preserve")
    instr.text = f" SEQ {label} \\* ARABIC "
    para.add_run()._r.append(instr)
    fld_char("separate")
    para.add_run(number)
    fld_char("end")
    para.add_run(rest)


def _normalize_zip(data: bytes) -> bytes:
    """Rewrite a zip (docx) with fixed member timestamps and attributes, same order."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=FIXED_ZIP_TIME)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            fixed.create_system = 0
            dst.writestr(fixed, src.read(info.filename), compresslevel=9)
    return out.getvalue()


def write_policy_docx(path: Path) -> None:
    from docx import Document
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.shared import Pt

    doc = Document()
    _set_east_asian_font(doc.styles["Normal"], "宋体")
    doc.styles["Normal"].font.size = Pt(11)
    for name in ("Title", "Heading 1", "Heading 2", "Heading 3", "Caption"):
        _set_east_asian_font(doc.styles[name], "黑体")

    doc.add_paragraph(POLICY_TITLE, style="Title")
    sub = doc.add_paragraph(POLICY_SUBTITLE)
    sub.alignment = WD_ALIGN_PARAGRAPH.CENTER

    levels = {"h1": 1, "h2": 2, "h3": 3}
    for kind, text in POLICY_BODY:
        if kind in levels:
            doc.add_heading(text, level=levels[kind])
        elif kind == "p":
            doc.add_paragraph(text)
        elif kind == "caption":
            _add_seq_caption(doc, text)
        elif kind == "table":
            table = doc.add_table(rows=len(POLICY_TABLE), cols=len(POLICY_TABLE[0]))
            table.style = "Table Grid"
            for r, row in enumerate(POLICY_TABLE):
                for c, value in enumerate(row):
                    cell = table.cell(r, c)
                    cell.text = value
                    if r == 0:
                        for run in cell.paragraphs[0].runs:
                            run.bold = True
        else:  # pragma: no cover - guards the data above
            raise ValueError(kind)

    props = doc.core_properties
    props.author = "kbflow"
    props.last_modified_by = "kbflow"
    props.title = POLICY_TITLE
    props.subject = "kbflow demo corpus (fictional)"
    props.keywords = "水资源; 用水总量控制; 取水许可"
    props.comments = "Original fictional text written for the kbflow demo."
    props.category = ""
    props.revision = 1
    props.created = FIXED_DATETIME
    props.modified = FIXED_DATETIME
    props.last_printed = FIXED_DATETIME

    buf = io.BytesIO()
    doc.save(buf)
    path.write_bytes(_normalize_zip(buf.getvalue()))


# --------------------------------------------------------------------------------------------
# 2. flood_control_report.pdf
# --------------------------------------------------------------------------------------------

REPORT_TITLE = "清川市2025年汛期防洪工作总结"
REPORT_BYLINE = "清川市防汛抗旱指挥部办公室　2025年10月20日"

REPORT_TABLE = [
    ["水库名称", "所在区", "总库容（万立方米）", "汛末蓄水量（万立方米）", "汛限水位（米）"],
    ["青龙湖水库", "东湖区", "32600", "24850", "112.50"],
    ["白石水库", "西岭区", "18400", "13920", "86.00"],
    ["松溪水库", "南滨区", "9750", "7130", "64.20"],
    ["柳湾水库", "北塘区", "4280", "3365", "41.80"],
    ["合计", "—", "65030", "49265", "—"],
]

# kind: "h1" (一、…), "h2" (（一）…), "p", "caption", "table"
REPORT_BODY: list[tuple[str, str]] = [
    ("h1", "一、基本情况"),
    ("p", "2025年汛期（5月15日至9月30日），全市平均降雨量为1126毫米，较常年同期偏多18%。汛期共出现强降雨"
          "过程9次，其中7月22日至24日的“7·22”暴雨过程最为严重，南滨区柳塘站最大24小时降雨量达到286毫米，"
          "为1961年有实测记录以来的第二位。受强降雨影响，清江清川站于7月24日14时出现最高水位38.72米，"
          "超过警戒水位1.22米，超警戒时间持续41小时。"),
    ("p", "在市委、市政府的统一领导下，全市各级防汛部门坚持“人民至上、生命至上”，强化监测预报、水库调度"
          "和群众转移等各项工作，汛期全市未发生人员伤亡，未发生水库垮坝和堤防决口，城区主要道路积水均在"
          "6小时内排除，最大限度减轻了洪涝灾害损失。"),
    ("h1", "二、主要措施"),
    ("h2", "（一）提前部署，压实责任"),
    ("p", "4月底前完成全市防汛责任人调整公布，共落实各级防汛责任人2368名，其中水库、堤防、山洪灾害危险区"
          "等重点部位责任人764名。汛前组织开展防汛安全大检查，排查发现隐患点143处，汛前完成整改138处，"
          "其余5处落实了临时度汛措施。全市储备编织袋42万条、土工布6.5万平方米、抢险舟艇36艘。"),
    ("h2", "（二）科学调度水库，拦洪削峰"),
    ("p", "汛期各大中型水库累计拦蓄洪水1.86亿立方米。“7·22”暴雨期间，青龙湖水库最大入库流量1650立方米"
          "每秒，最大下泄流量420立方米每秒，削峰率74.5%，有效减轻了下游东湖区和新港区的防洪压力。"
          "汛末主要水库蓄水情况见表1。"),
    ("caption", "表1 主要水库汛末蓄水情况"),
    ("table", ""),
    ("p", "汛末四座主要水库合计蓄水49265万立方米，比去年同期多蓄3120万立方米，为冬春季供水打下了良好基础。"),
    ("h2", "（三）强化预警，及时转移群众"),
    ("p", "市气象局、市水务局联合发布暴雨预警信息46次，通过短信、广播和村村响系统覆盖受影响群众。"
          "汛期累计紧急转移受威胁群众12680人，其中“7·22”暴雨期间转移8415人。转移群众均得到妥善安置，"
          "险情解除后有序返回。"),
    ("h2", "（四）加强城市排涝"),
    ("p", "全市38座排涝泵站汛期累计运行2150台时，抽排涝水2340万立方米。新港区对12处易涝点实施了"
          "改造，改造后的易涝点在“7·22”暴雨中未出现严重积水。"),
    ("h1", "三、存在问题"),
    ("p", "一是部分小型水库监测设施不完善，全市仍有17座小型水库未安装雨水情自动测报设施；二是城区部分老旧"
          "排水管网排水标准偏低，北塘区老城片区排水能力仅为一年一遇；三是基层防汛队伍专业化水平有待提高，"
          "部分乡镇抢险人员缺乏实战演练。"),
    ("h1", "四、下一步工作"),
    ("p", "一是在2026年汛前完成17座小型水库雨水情测报和大坝安全监测设施建设；二是推进北塘区老城片区排水管网"
          "改造，将排水标准提高到三年一遇；三是每年至少组织两次防汛抢险综合演练，提升基层应急处置能力；"
          "四是修订《清川市防汛应急预案》，进一步明确水库调度和群众转移的启动条件。"),
]


def write_report_pdf(path: Path) -> None:
    from reportlab import rl_config

    rl_config.invariant = 1  # fixed creation date and document id
    from reportlab.lib import colors
    from reportlab.lib.enums import TA_CENTER
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    font = "STSong-Light"
    pdfmetrics.registerFont(UnicodeCIDFont(font))

    base = dict(fontName=font, wordWrap="CJK")
    title = ParagraphStyle("title", fontSize=20, leading=30, alignment=TA_CENTER, spaceAfter=4, **base)
    byline = ParagraphStyle("byline", fontSize=11, leading=18, alignment=TA_CENTER, spaceAfter=14, **base)
    h1 = ParagraphStyle("h1", fontSize=16, leading=26, spaceBefore=12, spaceAfter=6, **base)
    h2 = ParagraphStyle("h2", fontSize=13.5, leading=22, spaceBefore=8, spaceAfter=4, **base)
    body = ParagraphStyle("body", fontSize=11, leading=19, firstLineIndent=22, spaceAfter=6, **base)
    caption = ParagraphStyle("caption", fontSize=11, leading=18, alignment=TA_CENTER, spaceBefore=6,
                             spaceAfter=4, **base)
    cell = ParagraphStyle("cell", fontSize=10, leading=14, alignment=TA_CENTER, **base)

    story = [Paragraph(REPORT_TITLE, title), Paragraph(REPORT_BYLINE, byline)]
    styles = {"h1": h1, "h2": h2, "p": body, "caption": caption}
    for kind, text in REPORT_BODY:
        if kind == "table":
            data = [[Paragraph(v, cell) for v in row] for row in REPORT_TABLE]
            table = Table(data, colWidths=[30 * mm, 24 * mm, 38 * mm, 42 * mm, 30 * mm], repeatRows=1)
            table.setStyle(TableStyle([
                ("GRID", (0, 0), (-1, -1), 0.8, colors.black),
                ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#E6E6E6")),
                ("VALIGN", (0, 0), (-1, -1), "MIDDLE"),
                ("TOPPADDING", (0, 0), (-1, -1), 4),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 4),
            ]))
            story.append(table)
            story.append(Spacer(1, 8))
        else:
            story.append(Paragraph(text, styles[kind]))

    def footer(canvas, doc_):
        canvas.saveState()
        canvas.setFont(font, 9)
        canvas.drawCentredString(A4[0] / 2, 12 * mm, f"— {doc_.page} —")
        canvas.restoreState()

    doc = SimpleDocTemplate(
        str(path), pagesize=A4, leftMargin=25 * mm, rightMargin=25 * mm, topMargin=25 * mm,
        bottomMargin=25 * mm, title=REPORT_TITLE, author="kbflow", subject="kbflow demo corpus (fictional)",
        creator="kbflow examples/make_demo.py", invariant=1,
    )
    doc.build(story, onFirstPage=footer, onLaterPages=footer)


# --------------------------------------------------------------------------------------------
# 3. reservoir_maintenance_guide.md
# --------------------------------------------------------------------------------------------

GUIDE_MD = """\
# 清川市中小型水库日常维护指南

本指南适用于清川市水务局直管的青龙湖水库、白石水库、松溪水库和柳湾水库，以及各区管理的小型水库。\
各水库管理单位应当结合本库实际制定具体的维护细则，并报市水务局工程管理处备案。

## 一、日常巡查

### 1.1 巡查频次

水库管理单位应当按照不同时段确定巡查频次。遇库水位超过汛限水位、发生有感地震或者大坝出现异常情况时，\
应当加密巡查，必要时实行24小时值守。

| 时段 | 巡查频次 | 巡查人员 |
| --- | --- | --- |
| 非汛期（10月1日至次年5月14日） | 每周2次 | 巡查员1名 |
| 汛期（5月15日至9月30日） | 每天1次 | 巡查员2名 |
| 超汛限水位或暴雨期间 | 每2小时1次 | 巡查员2名及技术负责人 |

### 1.2 大坝巡查要点

- 坝顶：检查路面有无裂缝、塌陷，防浪墙有无破损。
- 迎水坡：检查护坡块石有无松动、滑移，水面附近有无漩涡。
- 背水坡：检查有无散浸、渗水、管涌和白蚁活动痕迹。
- 溢洪道：检查进口有无漂浮物堵塞，闸门启闭是否灵活。
- 放水设施：检查放水洞有无异常声响，出口水流是否浑浊。

巡查发现异常情况的，巡查员应当在30分钟内报告水库技术负责人，并做好拍照、标记和文字记录。

## 二、监测设施维护

### 2.1 水位传感器

各水库坝前均安装雷达式水位传感器，传感器数据每5分钟上传一次至市水务局水库监管平台。\
管理单位每月应当用人工水尺对传感器读数进行一次比测，两者偏差超过2厘米的，应当重新校准。\
以青龙湖水库3号水位传感器为例，其配置如下：

```yaml
sensor:
  id: QLH-WL-03
  reservoir: 青龙湖水库
  type: radar
  sample_interval_s: 300
  upload_endpoint: platform.qingchuan-water.example/api/v1/levels
  alarm:
    flood_limit_m: 112.50
    warning_m: 113.20
```

### 2.2 渗压计与量水堰

渗压计读数每周记录一次，量水堰渗流量每天记录一次。渗流量连续三天增大且水质变浑的，\
应当立即上报并启动应急预案。

## 三、年度维护

每年汛前（4月30日前）应当完成闸门和启闭机的保养、电气设备检测和备用柴油发电机试运行，\
备用发电机试运行时间不少于2小时。每年汛后（11月底前）应当完成坝坡除草、排水沟清淤和白蚁防治，\
并编写年度维护报告，于12月15日前报送市水务局。
"""

# --------------------------------------------------------------------------------------------
# 4. faq.txt
# --------------------------------------------------------------------------------------------

FAQ_TXT = """\
清川市水务常见问题解答

问：清川市居民生活用水的阶梯水量是怎么划分的？
答：按年度计算，第一阶梯为年用水量180立方米以下（含），第二阶梯为181至260立方米，第三阶梯为260立方米以上。家庭常住人口超过5人的，每增加1人，各阶梯水量基数相应增加30立方米。

问：家里停水了应该打哪个电话？
答：可以拨打清川水务24小时服务热线96188，也可以通过“清川水务”微信公众号报修。计划停水会提前24小时在公众号和小区公告栏通知。

问：怎样申请办理居民用水新开户？
答：携带房屋产权证明和户主身份证到所在区的水务营业厅办理，也可以在“清川水务”微信公众号线上申请。资料齐全的，3个工作日内完成装表通水。

问：清川市的自来水主要来自哪里？
答：中心城区的自来水主要来自青龙湖水库和白石水库，南滨区主要由松溪水库供水，新港区以清江过境水为主要水源。全市共有6座自来水厂，日供水能力合计145万立方米。

问：自来水水质是否有人监测，结果在哪里看？
答：市水务局会同市生态环境局对水源地和出厂水进行监测，每月5日前公布上月水源地水质状况。市民可以在市水务局网站的“水质公开”栏目查询。

问：发现有人在水库保护区内游泳、垂钓怎么办？
答：青龙湖水库、白石水库和松溪水库一级保护区内禁止游泳、垂钓和网箱养殖。发现违法行为可以拨打12345政务服务热线举报，经查证属实的，按规定给予举报人奖励。
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    write_policy_docx(out / "water_management_policy.docx")
    write_report_pdf(out / "flood_control_report.pdf")
    (out / "reservoir_maintenance_guide.md").write_bytes(GUIDE_MD.encode("utf-8"))
    (out / "faq.txt").write_bytes(FAQ_TXT.encode("utf-8"))
    for name in sorted(p.name for p in out.iterdir()):
        print(f"{(out / name).stat().st_size:>8}  {out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
