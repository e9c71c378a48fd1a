#include "traces/report/html.hpp"

#include <fmt/core.h>

namespace cardsim::embedded {
extern const std::string_view report_css;
extern const std::string_view report_js;
} // namespace cardsim::embedded

namespace cardsim::traces::report {

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&#39;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

std::string script_json(const boost::json::value& value) {
    auto text = boost::json::serialize(value);
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '<')
            out += "\\u003c"; // only ever inside a JSON string, where the escape reads back as `<`
        else
            out += c;
    }
    return out;
}

std::string document(std::string_view title, std::string_view body) {
    // The error catcher runs before anything else: a script that throws, fails to parse or logs
    // an error shows in #page-status (data-errors), which a headless browser's DOM dump reveals.
    constexpr std::string_view catcher =
        "(function(){var n=0;function note(m){n++;var s=document.getElementById('page-status');"
        "if(s){s.dataset.errors=String(n);s.textContent+=m+'\\n';}else{(window.pageErrors=window.pageErrors||"
        "[])"
        ".push(m);}}window.addEventListener('error',function(e){note('error: '+(e.message||e.type));},true);"
        "window.addEventListener('unhandledrejection',function(e){note('rejection: '+e.reason);});"
        "var ce=console.error;console.error=function(){note('console.error: '+Array.prototype.join.call("
        "arguments,' '));return ce.apply(console,arguments);};window.noteError=note;})();";
    return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                       "<title>{}</title>\n<style>\n{}</style>\n<script>{}</script>\n</head>\n<body>\n"
                       "<pre id=\"page-status\" data-errors=\"0\" data-ready=\"no\" hidden></pre>\n"
                       "{}\n<script>\n{}</script>\n</body>\n</html>\n",
                       escape(title), embedded::report_css, catcher, body, embedded::report_js);
}

std::string figure_card(std::string_view label, std::string_view value, std::string_view note,
                        std::string_view cls) {
    return fmt::format("<div class=\"card{}{}\"><div class=\"label\">{}</div><div class=\"value\">{}</div>"
                       "<div class=\"note\">{}</div></div>\n",
                       cls.empty() ? "" : " ", cls, escape(label), escape(value), escape(note));
}

} // namespace cardsim::traces::report
