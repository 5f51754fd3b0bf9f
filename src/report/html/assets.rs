//! The page's inline style sheet and script. The script only adds
//! comfort (the log/linear switch, legend toggles, timeline hover); every
//! chart reads fully without it.

/// The style sheet.
pub const CSS: &str = r#"
:root{--ink:#1b1b1b;--muted:#555;--line:#d0d0d0;--accent:#0072B2;--warn:#9a3a00}
*{box-sizing:border-box}
body{margin:0;background:#f6f6f4;color:var(--ink);font:15px/1.45 "DejaVu Sans","Liberation Sans",Arial,Helvetica,sans-serif}
header{background:#16324f;color:#fff;padding:18px 24px 10px}
header h1{margin:0 0 6px;font-size:24px;font-weight:600}
nav a{color:#dbe9f7;margin-right:16px;text-decoration:none;font-size:14px}
nav a:hover{text-decoration:underline}
main{max-width:1200px;margin:0 auto;padding:8px 20px 40px}
section{background:#fff;border:1px solid #e2e2e2;border-radius:6px;padding:14px 18px;margin:16px 0}
h2{font-size:20px;margin:4px 0 10px}
h3{font-size:16px;margin:18px 0 6px}
.lead{color:var(--muted);margin:14px 2px 0}
.meta{color:var(--muted);margin:0 0 8px;font-size:13px}
.note,.caption{color:#444;font-size:13px;margin:6px 0}
.warn{color:var(--warn);background:#fff4ea;padding:4px 8px;border-radius:4px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;margin:4px 0}
th,td{border-bottom:1px solid #e6e6e6;padding:4px 6px;text-align:left;vertical-align:top}
thead th{background:#eef1f4;font-weight:600}
details summary{cursor:pointer;color:var(--accent);font-size:14px;margin:6px 0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td small{display:block;color:#5a5a5a;font-size:11px}
td.name{white-space:nowrap;font-weight:600}
tr.group th{background:#f7f8f9;font-weight:600;font-size:14px;padding-top:10px;text-align:left}
tr.group .meta{font-weight:400;font-size:12px;margin-left:8px}
tr.group .warn{font-weight:400;font-size:13px;margin-top:4px}
td.rough{background:#fff6dc}
td.insufficient{color:#777;background:#f2f2f2}
td.na{color:#888}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
figure{margin:6px 0;position:relative}
svg.chart{display:block;width:100%;height:auto}
svg .lg{cursor:pointer}
svg .lg.off{opacity:.3}
.yscale{font-size:13px;color:var(--muted);margin-bottom:4px}
.yscale button{font:inherit;border:1px solid var(--accent);background:#fff;color:var(--accent);padding:2px 12px;cursor:pointer}
.yscale button:first-of-type{border-radius:4px 0 0 4px}
.yscale button:last-of-type{border-radius:0 4px 4px 0;margin-left:-1px}
.yscale button[aria-pressed=true]{background:var(--accent);color:#fff}
.tip{position:absolute;pointer-events:none;background:#fff;border:1px solid #888;border-radius:4px;padding:6px 8px;font-size:12px;line-height:1.35;box-shadow:0 2px 6px rgba(0,0,0,.18);white-space:nowrap;z-index:2}
.findings{border-left:6px solid #D55E00;background:#fff6f0}
.findings h2{color:var(--warn)}
.findings li{margin:4px 0}
table.compare tr.worse td.verdict{color:#b00020;font-weight:700}
table.compare tr.better td.verdict{color:#006d4f;font-weight:700}
table.compare tr.same td.verdict{color:var(--muted)}
table.kv th{background:none;width:1%;white-space:nowrap;color:#333}
table.kv td{word-break:break-word}
table.json{font-size:12px}
tr.warnrow td{background:#fff0e6}
tr.okrow td:first-child{border-left:3px solid #009E73}
tr.warnrow td:first-child{border-left:3px solid #D55E00}
.na{color:#888;font-style:italic}
ul.hints{margin:0;padding-left:16px}
ul.causes{list-style:none;margin:6px 0;padding:0;font-size:13px;columns:2 420px}
ul.causes li{margin:2px 0;break-inside:avoid}
code{font-size:12px;background:#f1f1f1;padding:0 3px;border-radius:3px}
footer{color:#777;font-size:12px;text-align:center;padding:10px}
"#;

/// The script.
pub const JS: &str = r#"
(function(){
"use strict";
var buttons=document.querySelectorAll(".yscale button");
buttons.forEach(function(b){b.addEventListener("click",function(){
  var log=b.getAttribute("data-y")==="log";
  document.getElementById("fig-spectrum-log").hidden=!log;
  document.getElementById("fig-spectrum-linear").hidden=log;
  buttons.forEach(function(o){o.setAttribute("aria-pressed",String(o===b));});
});});
document.querySelectorAll("svg .lg").forEach(function(g){g.addEventListener("click",function(){
  var s=g.getAttribute("data-s"),off=!g.classList.contains("off");
  document.querySelectorAll('[data-s="'+s+'"]').forEach(function(e){
    if(e.classList.contains("lg")){e.classList.toggle("off",off);}else{e.style.display=off?"none":"";}
  });
});});
function fmt(ns){
  var u=ns>=1e9?["s",1e9]:ns>=1e6?["ms",1e6]:ns>=1e3?["\u00b5s",1e3]:["ns",1];
  var v=ns/u[1],d=u[0]==="ns"||v>=1000?0:v>=100?1:v>=10?2:3;
  return v.toFixed(d)+" "+u[0];
}
function range(lo,hi){return lo===hi?fmt(hi):fmt(lo)+" \u2013 "+fmt(hi);}
document.querySelectorAll("figure.timeline").forEach(function(fig){
  var svg=fig.querySelector("svg"),area=svg.querySelector("rect.hover"),rule=svg.querySelector("line.rule");
  var tip=fig.querySelector(".tip"),hover=JSON.parse(fig.querySelector("script.hover-data").textContent);
  var data=hover.b,stalls=hover.s;
  var x0=+area.getAttribute("x"),w=+area.getAttribute("width"),t1=+area.getAttribute("data-t1");
  function hide(){tip.hidden=true;rule.setAttribute("visibility","hidden");}
  area.addEventListener("mouseleave",hide);
  area.addEventListener("mousemove",function(ev){
    var pt=svg.createSVGPoint();pt.x=ev.clientX;pt.y=ev.clientY;
    var p=pt.matrixTransform(svg.getScreenCTM().inverse()),t=(p.x-x0)/w*t1;
    var lo=0,hi=data.length-1;
    while(lo<hi){var m=(lo+hi+1)>>1;if(data[m][0]<=t){lo=m;}else{hi=m-1;}}
    var d=data[lo];if(!d){hide();return;}
    var x=x0+((d[0]+d[1])/2)/t1*w;
    rule.setAttribute("x1",x);rule.setAttribute("x2",x);rule.setAttribute("visibility","visible");
    var when=(d[2]>1?d[2]+" intervals, ":"")+d[0]+"\u2013"+d[1]+" s",stall="";
    stalls.forEach(function(s,i){if(s[0]<d[1]&&s[1]>d[0]){stall+="<br><b>stall "+(i+1)+"</b> ("+s[0]+"\u2013"+s[1]+" s)";}});
    tip.innerHTML=d[3]===0?"<b>"+when+"</b><br>nothing completed"+stall:
      "<b>"+when+"</b><br>completions "+d[3].toLocaleString("en")+"<br>p50 "+range(d[4],d[5])+
      "<br>p99 "+range(d[6],d[7])+"<br>max "+fmt(d[8])+"<br>mean "+fmt(d[9])+stall;
    tip.hidden=false;
    var box=fig.getBoundingClientRect(),left=ev.clientX-box.left+14;
    if(left+tip.offsetWidth>box.width){left=ev.clientX-box.left-tip.offsetWidth-14;}
    tip.style.left=left+"px";tip.style.top=(ev.clientY-box.top+10)+"px";
  });
});
document.documentElement.classList.add("js");
})();
"#;
