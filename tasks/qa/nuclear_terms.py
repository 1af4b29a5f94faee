"""English nuclear-safety words → the Chinese of China's nuclear safety rules and standards.

China's nuclear safety regulations (HAF, HAD) and energy standards (NB/T) translate the IAEA's safety
standards (SSG-25 "Periodic Safety Review for Nuclear Power Plants", its fourteen safety factors) with a
fixed vocabulary: "periodic safety review" is 定期安全评价 or 定期安全审查, "safety factor" 安全要素,
"operating organization" 营运单位. CC-CEDICT (`tasks.qa.gloss`) has none of these phrases, and its
one-wording senses miss the everyday words they are made of ("safety" is 安全性 there, "review" 审稿,
"assessment" 评估, "operating" nothing), so an English question over such a standard finds none of its
terms. They are listed here once, as English → Chinese, in the lower-case word form the glossing reads
(`[a-z]+` words: "defence-in-depth" is "defence in depth"); each adds to the dictionary's senses.
"""
from __future__ import annotations

NUCLEAR_TERMS: dict[str, tuple[str, ...]] = {
    # the words the phrases are made of, which CC-CEDICT glosses otherwise or not at all
    "safety": ("安全",),
    "review": ("评价", "审查"),
    "assessment": ("评价",),
    "evaluation": ("评价",),
    "operating": ("运行",),
    "operation": ("运行",),
    "operational": ("运行",),
    "modification": ("修改",),
    "programme": ("大纲",),
    "licence": ("许可证",),
    "compliance": ("符合性", "符合"),
    "applicability": ("适用性",),
    "weakness": ("弱项",),
    # the plant, its organizations and rules
    "nuclear power plant": ("核电厂", "核动力厂", "核动力"),
    "nuclear safety": ("核安全", "安全"),
    "nuclear safety law": ("核安全法", "安全法"),
    "national nuclear safety administration": ("国家核安全局", "国家", "安全局"),
    "nnsa": ("国家核安全局", "国家", "安全局"),
    "regulatory body": ("监管",),
    "operating organization": ("营运单位",),
    "operating organisation": ("营运单位",),
    "operating licence": ("运行许可证",),
    "operating license": ("运行许可证",),
    "pressurized water reactor": ("压水堆",),
    "pwr": ("压水堆",),
    "reactor coolant system": ("反应堆冷却剂系统",),
    "important to safety": ("安全重要",),
    "safety classification": ("安全分级",),
    "design basis": ("设计基准",),
    "defence in depth": ("纵深防御",),
    "defense in depth": ("纵深防御",),
    "safety analysis report": ("安全分析报告",),
    "technical specifications": ("技术规格书",),
    "operational limits and conditions": ("运行限值和条件",),
    "structures systems and components": ("构筑物", "系统", "部件"),
    # a periodic safety review and its fourteen safety factors (IAEA SSG-25)
    "periodic safety review": ("定期安全评价", "定期安全审查"),
    "safety review": ("安全评价", "安全审查"),
    "safety factor": ("安全要素",),
    "safety baseline": ("安全基准",),
    "current standards": ("现行标准",),
    "good practice": ("良好实践",),
    "review basis": ("评价依据",),
    "project team": ("项目团队", "项目组"),
    "preparation phase": ("准备阶段",),
    "execution phase": ("执行阶段",),
    "global assessment": ("总体评价",),
    "overall assessment": ("总体评价",),
    "overall evaluation": ("总体评价",),
    "corrective action": ("纠正行动",),
    "safety improvement": ("安全改进",),
    "plant design": ("核电厂设计",),
    "actual condition": ("实际状态",),
    "equipment qualification": ("设备鉴定", "设备合格鉴定"),
    "aging": ("老化",),
    "deterministic safety analysis": ("确定论安全分析", "安全分析"),
    "probabilistic safety assessment": ("概率安全分析", "概率论安全分析", "概率安全评价"),
    "probabilistic safety analysis": ("概率安全分析", "概率论安全分析", "概率安全评价"),
    "hazard analysis": ("灾害分析",),
    "safety performance": ("安全性能",),
    "operating experience": ("运行经验",),
    "experience feedback": ("经验反馈",),
    "research findings": ("研究成果",),
    "management system": ("管理体系",),
    "safety culture": ("安全文化",),
    "emergency planning": ("应急计划",),
    "radiological impact": ("辐射", "环境影响"),
}
